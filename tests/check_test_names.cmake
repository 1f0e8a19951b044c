# Checks that every Catch2 test case name survives ctest discovery:
# catch_discover_tests splits names at ';' (a CMake list separator), and the
# two halves match no test, so Catch runs nothing and the test "passes".
# Run by CTest as `test_names_discoverable`.
file(GLOB_RECURSE files ${ROOT}/tests/*.cpp)
set(failures "")
foreach(f IN LISTS files)
  file(STRINGS ${f} cases REGEX "TEST_CASE\\(\"[^\"]*;")
  foreach(line IN LISTS cases)
    string(APPEND failures "${f}: ${line}\n")
  endforeach()
endforeach()
if(failures)
  message(FATAL_ERROR "test case names with ';' (ctest would run nothing for them):\n${failures}")
endif()
