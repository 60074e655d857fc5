// Umbrella header: the whole ipcrt runtime API.
#pragma once

#include "ipcrt/buf_ring.hpp"
#include "ipcrt/channel.hpp"
#include "ipcrt/features.hpp"
#include "ipcrt/ops.hpp"
#include "ipcrt/options.hpp"
#include "ipcrt/ring.hpp"
#include "ipcrt/runtime.hpp"
#include "ipcrt/task.hpp"
#include "ipcrt/timer.hpp"
