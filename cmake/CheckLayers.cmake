# The layers of src/, lowest first: a file may include headers of its own folder, of the folders
# before it in this list, and of kernels/ (cpu/, cuda/, ops.h; kernels/ itself sees no src/ header,
# which its include path enforces). Run at every build (src/CMakeLists.txt: target
# headroom_layers); an upward include stops the build, naming the file, the line and the rule.
#   cmake -DSRC=<repo>/src -P cmake/CheckLayers.cmake
set(LAYERS util config parallel model io data train eval analysis app)
list(JOIN LAYERS " < " _order)

file(GLOB_RECURSE _files RELATIVE ${SRC} ${SRC}/*.h ${SRC}/*.cpp)
set(_bad "")
foreach(_f IN LISTS _files)
  string(REGEX MATCH "^[^/]+" _own "${_f}")
  list(FIND LAYERS "${_own}" _own_rank)
  if(_own_rank EQUAL -1)
    list(APPEND _bad "src/${_f}: folder '${_own}' is in no layer (add it to LAYERS in cmake/CheckLayers.cmake)")
    continue()
  endif()
  file(STRINGS ${SRC}/${_f} _includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"[a-z_]+/")
  foreach(_line IN LISTS _includes)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([a-z_]+)/.*" "\\1" _dep "${_line}")
    if(_dep STREQUAL "cpu" OR _dep STREQUAL "cuda")
      continue()  # kernels/, below every layer
    endif()
    list(FIND LAYERS "${_dep}" _dep_rank)
    if(_dep_rank GREATER _own_rank)
      list(APPEND _bad "src/${_f}: ${_line} — ${_own}/ may not include ${_dep}/ (layers, lowest first: ${_order})")
    endif()
  endforeach()
endforeach()
if(_bad)
  list(JOIN _bad "\n  " _msg)
  message(FATAL_ERROR "upward includes:\n  ${_msg}")
endif()
