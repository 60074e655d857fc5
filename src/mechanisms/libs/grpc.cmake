# libs/grpc's protocol (grpc_bench.proto): protoc and gRPC's plugin generate its messages and
# service stubs into the build folder, compiled once into a library of their own, without the
# project's warnings (generated code is not ours to fix) or its precompiled headers.
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
set(grpc_gen ${CMAKE_CURRENT_BINARY_DIR}/grpc_gen)
set(grpc_gen_sources ${grpc_gen}/grpc_bench.pb.cc ${grpc_gen}/grpc_bench.grpc.pb.cc)
add_custom_command(
  OUTPUT ${grpc_gen_sources} ${grpc_gen}/grpc_bench.pb.h ${grpc_gen}/grpc_bench.grpc.pb.h
  COMMAND ${CMAKE_COMMAND} -E make_directory ${grpc_gen}
  COMMAND protobuf::protoc --proto_path=${CMAKE_CURRENT_LIST_DIR} --cpp_out=${grpc_gen} --grpc_out=${grpc_gen}
          --plugin=protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin> grpc_bench.proto
  DEPENDS ${CMAKE_CURRENT_LIST_DIR}/grpc_bench.proto
  COMMENT "Generating the gRPC sources of grpc_bench.proto"
  VERBATIM)
add_library(ipclab_grpc_proto STATIC ${grpc_gen_sources})
set_target_properties(ipclab_grpc_proto PROPERTIES COMPILE_OPTIONS "")
target_include_directories(ipclab_grpc_proto PUBLIC ${grpc_gen})
target_link_libraries(ipclab_grpc_proto PUBLIC protobuf::libprotobuf gRPC::grpc++)

# The mechanism itself: an OBJECT library (it registers itself from a static constructor), linked
# into the ipclab executable. Its dependencies are private, so they reach the executable's link
# only, not its compile flags.
add_library(ipclab_grpc OBJECT ${CMAKE_CURRENT_LIST_DIR}/grpc.cpp)
target_link_libraries(ipclab_grpc PRIVATE ipclab_core ipclab_grpc_proto)
