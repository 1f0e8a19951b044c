# How a CUDA plugin (a MODULE library the main binary dlopen()s through
# kernels/cuda_plugin_loader.cpp) is linked: only the entry exported, no
# undefined symbols left for load time. The real plugin (kernels/) and the
# test fakes (tests/kernels/fake_plugin/) use the same options.
set(TC_CUDA_PLUGIN_FILE_NAME libthermocline_cuda.so)
# Relative to the install prefix; the loader also tries <exe dir>/../lib/thermocline.
set(TC_CUDA_PLUGIN_INSTALL_SUBDIR lib/thermocline)

function(tc_cuda_plugin_link_options target)
  set(_map ${PROJECT_SOURCE_DIR}/cmake/cuda_plugin.map)
  target_link_options(${target} PRIVATE "LINKER:--version-script=${_map}" "LINKER:--no-undefined")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${_map})
endfunction()
