module ipclab/peers/go

go 1.21
