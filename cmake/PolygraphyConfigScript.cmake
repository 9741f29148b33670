# polygraphy-config: prints the flags that build a program against libpolygraphy (build tree: bin/,
# install tree: <prefix>/bin). Used to build `polygraphy run --gen-script` programs in one command.

# The public headers include <onnx/onnx_pb.h>, so programs need ONNX's definitions and the libraries
# the library's interface links (onnx_proto, protobuf). /usr/include is left out: -I on it breaks
# the standard library's #include_next.
get_target_property(_onnx_defs onnx_proto INTERFACE_COMPILE_DEFINITIONS)
get_target_property(_onnx_incs onnx_proto INTERFACE_INCLUDE_DIRECTORIES)
set(_dep_cflags "")
foreach(_def IN LISTS _onnx_defs)
  string(APPEND _dep_cflags " -D${_def}")
endforeach()
foreach(_inc IN LISTS _onnx_incs Protobuf_INCLUDE_DIRS)
  if(_inc AND NOT _inc STREQUAL "/usr/include")
    string(APPEND _dep_cflags " -I${_inc}")
  endif()
endforeach()
set(_dep_libs "$<TARGET_LINKER_FILE:onnx_proto>")
foreach(_lib IN LISTS Protobuf_LIBRARIES)
  string(APPEND _dep_libs " ${_lib}")
endforeach()
string(APPEND _dep_libs " -pthread")

# A sanitizer build's library needs its programs built with the same sanitizers (the runtime must
# come first), so the -fsanitize options of CMAKE_CXX_FLAGS are passed on.
string(REGEX MATCHALL "-fsanitize=[^ ]+" _sanitize_flags "${CMAKE_CXX_FLAGS}")
list(FILTER _sanitize_flags EXCLUDE REGEX "fuzzer")
foreach(_flag IN LISTS _sanitize_flags)
  string(APPEND _dep_cflags " ${_flag}")
  string(APPEND _dep_libs " ${_flag}")
endforeach()

# The script's first lines set $prefix, $includedir and $libdir: absolute for the build tree, and for an
# install tree worked out from the script's own location (the prefix may be moved after installing).
function(polygraphy_write_config_script output locate)
  set(POLYGRAPHY_CONFIG_LOCATE "${locate}")
  set(POLYGRAPHY_CONFIG_DEP_CFLAGS "${_dep_cflags}")
  set(POLYGRAPHY_CONFIG_DEP_LIBS "${_dep_libs}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/polygraphy-config.sh.in ${output}.in @ONLY)
  file(GENERATE OUTPUT ${output} INPUT ${output}.in
       FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
endfunction()

polygraphy_write_config_script(${PROJECT_BINARY_DIR}/bin/polygraphy-config
  "prefix='${PROJECT_BINARY_DIR}'\nincludedir='${PROJECT_SOURCE_DIR}/include'\nlibdir='$<TARGET_FILE_DIR:polygraphy>'")

file(RELATIVE_PATH _bin_to_prefix "/prefix/${CMAKE_INSTALL_BINDIR}" "/prefix")
polygraphy_write_config_script(${PROJECT_BINARY_DIR}/install-tree/polygraphy-config
  "prefix=$(CDPATH= cd -- \"$(dirname -- \"$(readlink -f -- \"$0\")\")/${_bin_to_prefix}\" && pwd)\nincludedir=\"$prefix/${CMAKE_INSTALL_INCLUDEDIR}\"\nlibdir=\"$prefix/${CMAKE_INSTALL_LIBDIR}\"")
install(PROGRAMS ${PROJECT_BINARY_DIR}/install-tree/polygraphy-config DESTINATION ${CMAKE_INSTALL_BINDIR})
