# Grad mode, anomaly and debug levels, creation sites, version counters.
# Part of engine.pyx (included there; it is one compiled module).

# --- grad mode ----------------------------------------------------------------

def is_grad_enabled():
    """True when operations are recorded for autograd in this thread."""
    return cygrad_grad_mode != 0


def _set_grad_mode(bint flag):
    """Set this thread's grad mode; returns the previous mode."""
    global cygrad_grad_mode
    cdef bint prev = cygrad_grad_mode != 0
    cygrad_grad_mode = 1 if flag else 0
    return prev


def is_anomaly_enabled():
    return _anomaly


def _set_anomaly(bint flag):
    global _anomaly
    cdef bint prev = _anomaly
    _anomaly = flag
    return prev


def _set_debug_level(int level):
    global _debug_level
    cdef int prev = _debug_level
    _debug_level = level
    return prev


def _get_debug_level():
    return _debug_level


@cython.final
@cython.no_gc
cdef class Site:
    """Where a forward op ran: a user code object and instruction offset.

    Behaves like the tuple ``(filename, lineno)``; the line number is decoded
    from the code object's line table only when it is read.
    """
    cdef object code
    cdef int lasti

    @property
    def filename(self):
        return self.code.co_filename

    @property
    def lineno(self):
        return PyCode_Addr2Line(<PyCodeObject*>self.code, self.lasti)

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return (self.filename, self.lineno)[i]

    def __iter__(self):
        return iter((self.filename, self.lineno))

    def __eq__(self, other):
        try:
            return tuple(self) == tuple(other)
        except TypeError:
            return NotImplemented

    def __hash__(self):
        return hash(tuple(self))

    def __str__(self):
        return f"{self.filename}:{self.lineno}"

    def __repr__(self):
        return f"Site({self.filename!r}, {self.lineno})"


cdef object _user_site():
    """The innermost user frame outside the cygrad package, as a ``Site``.

    Reads only the frame's code object and instruction offset: no frame
    object, traceback or string is made.  Returns None when capture is off
    (debug level 0) or no user frame exists.
    """
    cdef int lasti = 0
    cdef void* code
    cdef Site site
    cdef Py_ssize_t h
    if _debug_level <= 0:
        return None
    code = cg_user_frame(&lasti)
    if code == NULL:
        return None
    # Sites are immutable, so a loop that runs the same line again shares one
    # object (no allocation per node): a small direct-mapped cache.
    h = ((<Py_ssize_t>code >> 4) ^ lasti) & 63
    site = <Site>_site_cache[h]
    if site is not None and <void*>site.code == code and site.lasti == lasti:
        return site
    site = Site.__new__(Site)
    site.code = <object>code
    site.lasti = lasti
    _site_cache[h] = site
    return site


cdef list _site_cache = [None] * 64


def user_site():
    """Python access to the creation-site capture (for diagnostics)."""
    return _user_site()


cdef extern from "cg_engine.h":
    bint cg_defer(PyObject* o) noexcept
    void cg_drain() noexcept


# --- version counters ------------------------------------------------------------

@cython.final
@cython.no_gc
cdef class Version:
    """A version counter shared by a tensor, its views and its detached aliases."""
    cdef public long long v
    cdef public object last_write    # (op name, site, old, new) of the last in-place
                                     # write while saved, for the version error
    cdef public bint saved           # some node saved this storage for backward:
                                     # only then do in-place writes record a site
