# cython: language_level=3
"""dlopen for the CUDA libraries, so that the other native modules find them already loaded.

Linked against nothing CUDA: it must import where cuDNN cannot be found, to say so. A library
opened here stays loaded for the life of the process (RTLD_GLOBAL, never closed), and the
dynamic linker then satisfies the other modules' NEEDED entries for its soname with it.
"""

cdef extern from "<dlfcn.h>" nogil:
    void *dlopen(const char *filename, int flags)
    char *dlerror()
    int dlinfo(void *handle, int request, void *info)
    int RTLD_NOW
    int RTLD_GLOBAL
    int RTLD_DI_LINKMAP

cdef extern from "<link.h>" nogil:
    struct link_map:
        char *l_name


def open_library(str name):
    """Load `name` (a path, or a bare soname for the system loader's search) and return the
    path of the file that was loaded. Raises OSError with the loader's message."""
    cdef bytes encoded = name.encode()
    cdef const char *c_name = encoded
    cdef void *handle
    cdef link_map *found = NULL
    with nogil:
        handle = dlopen(c_name, RTLD_NOW | RTLD_GLOBAL)
    if handle == NULL:
        error = dlerror()
        raise OSError(error.decode(errors="replace") if error != NULL else f"cannot load {name}")
    if dlinfo(handle, RTLD_DI_LINKMAP, &found) != 0 or found == NULL or found.l_name[0] == 0:
        return name
    return found.l_name.decode(errors="replace")
