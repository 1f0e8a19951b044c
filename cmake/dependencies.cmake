# Third-party dependencies, all from Debian 12 packages (scripts/setup.sh
# installs them). spdlog and fmt are used header-only so that binaries run on
# machines without Debian's shared libraries (the GPU machine).
find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(tomlplusplus REQUIRED)

add_library(tc_spdlog INTERFACE)
get_target_property(_spdlog_inc spdlog::spdlog_header_only INTERFACE_INCLUDE_DIRECTORIES)
target_include_directories(tc_spdlog SYSTEM INTERFACE ${_spdlog_inc})
target_compile_definitions(tc_spdlog INTERFACE SPDLOG_HEADER_ONLY SPDLOG_FMT_EXTERNAL)
target_link_libraries(tc_spdlog INTERFACE fmt::fmt-header-only Threads::Threads)

# cpp-httplib: Debian ships the header and a shared library; only server/ uses it.
# The library was built with OpenSSL, zlib and Brotli support, and those
# macros change the layout of its classes (httplib::Client gains members):
# every user must compile with the same macros, taken from its pkg-config
# file, or objects built here are smaller than what the library writes.
find_package(PkgConfig REQUIRED)
pkg_check_modules(HTTPLIB REQUIRED cpp-httplib)
find_path(HTTPLIB_INCLUDE_DIR httplib.h HINTS ${HTTPLIB_INCLUDE_DIRS} REQUIRED)
find_library(HTTPLIB_LIBRARY NAMES cpp-httplib HINTS ${HTTPLIB_LIBRARY_DIRS} REQUIRED)
add_library(tc_httplib INTERFACE)
target_include_directories(tc_httplib SYSTEM INTERFACE ${HTTPLIB_INCLUDE_DIR})
target_compile_options(tc_httplib INTERFACE ${HTTPLIB_CFLAGS_OTHER})
target_link_libraries(tc_httplib INTERFACE ${HTTPLIB_LIBRARY} Threads::Threads)

# The image decoders of vision requests (engine/vision), the libraries
# distributions keep patched against hostile files: libpng, libjpeg-turbo
# (its TurboJPEG API), libwebp and giflib (CMake's FindGIF: not every
# distribution ships its pkg-config file).
pkg_check_modules(TC_IMAGE_LIBS REQUIRED IMPORTED_TARGET libpng libturbojpeg libwebp)
find_package(GIF 5 REQUIRED)
add_library(tc_image_libs INTERFACE)
target_link_libraries(tc_image_libs INTERFACE PkgConfig::TC_IMAGE_LIBS GIF::GIF)

if(THERMOCLINE_TESTS)
  find_package(Catch2 2 REQUIRED)
  include(Catch)
endif()
