/* Preloaded into the app by run_monkey.sh (LD_PRELOAD): dlclose() does nothing, so no shared library is
 * unloaded before LeakSanitizer looks at the heap when the app exits.
 *
 * Why: Mesa's GL driver (swrast_dri.so: llvmpipe) and the X11 extension libraries GLFW opens are dlopen()ed and
 * dlclose()d at glfwTerminate(). Memory they still hold in their own globals then loses its only reference and
 * LeakSanitizer reports it as a leak with a stack in an "<unknown module>" (the library is gone, so it can be
 * neither symbolized nor suppressed by name). With the libraries kept loaded that memory stays reachable, as it
 * is in any program that does not unload them, and any real leak inside them has a stack that names the
 * library (tests/monkey/lsan.supp). Leaks in Stepformer's own code are unaffected: they are reported. */
int dlclose(void *handle) {
  (void)handle;
  return 0;
}
