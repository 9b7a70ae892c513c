# Fails when anything outside core/ reaches into core's private sources
# (core/src): an #include that names core/src or resolves to a file under
# it, or a CMakeLists.txt that puts core/src on an include path. Front ends
# use core/include (backstep/core/...) and tests core/testing/include
# (backstep/testing/...).
#
# Run at configure time (include() from the top-level CMakeLists.txt) and
# as the ctest test `core_boundary`:
#   cmake -DBACKSTEP_SOURCE_DIR=<repo> -P cmake/check_core_boundary.cmake
if(NOT BACKSTEP_SOURCE_DIR)
  set(BACKSTEP_SOURCE_DIR ${CMAKE_CURRENT_LIST_DIR}/..)
endif()
get_filename_component(root ${BACKSTEP_SOURCE_DIR} ABSOLUTE)

# Every top-level folder but core/, build trees and hidden ones.
file(GLOB children RELATIVE ${root} LIST_DIRECTORIES true ${root}/*)
set(files)
foreach(child ${children})
  if(child STREQUAL "core" OR child MATCHES "^build" OR child MATCHES "^\\."
     OR NOT IS_DIRECTORY ${root}/${child})
    continue()
  endif()
  file(GLOB_RECURSE found RELATIVE ${root} ${root}/${child}/*.h ${root}/${child}/*.hh
       ${root}/${child}/*.hpp ${root}/${child}/*.c ${root}/${child}/*.cc ${root}/${child}/*.cpp
       ${root}/${child}/*.inc ${root}/${child}/CMakeLists.txt ${root}/${child}/*.cmake)
  list(APPEND files ${found})
endforeach()

set(violations)
foreach(f ${files})
  if(f MATCHES "^cmake/check_core_boundary\\.cmake$")
    continue()
  endif()
  file(STRINGS ${root}/${f} lines REGEX "core/src|^[ \t]*#[ \t]*include")
  foreach(line ${lines})
    if(line MATCHES "core/src")
      if(NOT line MATCHES "^[ \t]*(#|//)" OR line MATCHES "^[ \t]*#[ \t]*include")
        list(APPEND violations "${f}: ${line}")
      endif()
    elseif(line MATCHES "^[ \t]*#[ \t]*include[ \t]*[\"<]([^\">]+)[\">]")
      set(included ${CMAKE_MATCH_1})
      if(EXISTS ${root}/core/src/${included} AND NOT IS_DIRECTORY ${root}/core/src/${included})
        list(APPEND violations "${f}: ${line}  (resolves to core/src/${included})")
      endif()
    endif()
  endforeach()
endforeach()

if(violations)
  list(JOIN violations "\n  " text)
  message(FATAL_ERROR "core/src is private to core/ (use backstep/core/... or "
                      "backstep/testing/...); outside core/:\n  ${text}")
endif()
