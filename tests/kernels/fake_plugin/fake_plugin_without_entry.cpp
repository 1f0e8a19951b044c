// A shared library that loads but is no CUDA plugin: it lacks the entry
// (thermocline_cuda_plugin_entry), for the loader's missing-symbol test.
extern "C" __attribute__((visibility("default"))) int thermocline_not_a_plugin() { return 0; }
