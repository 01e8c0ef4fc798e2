// A valid ELF shared object that is not a worker plugin: it exports a function, but nothing in the
// "worker" section. The registry must reject it before running any of its code.
extern "C" __attribute__((visibility("default"))) int not_a_plugin_entry(int x) { return x + 1; }
