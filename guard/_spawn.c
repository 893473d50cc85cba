/* guard._spawn: start a program that dies with the guard, without an extra exec.
 *
 * The relay runs the real shell as its child. A SIGKILL to the guard must not leave that child
 * running on, so the child asks the kernel for a signal when its parent dies
 * (prctl(PR_SET_PDEATHSIG), which survives execve). Python has no prctl, and util-linux's
 * setpriv, which the relay otherwise execs in front of the program, costs a whole program start
 * (its dynamic loading and locale set-up: about 1 ms). This module makes the same child in
 * one step, the way glibc's posix_spawn does: clone(CLONE_VM | CLONE_VFORK) on a stack of its
 * own with every signal blocked, then in the child only system calls: signal dispositions back
 * to the default where they were caught (and where asked), the requested mask, descriptor 2,
 * the death signal, a check that the parent is still there, execve.
 *
 * spawn(path, argv, envp, stderr_fd, sigmask, sigdef, deathsig) -> pid
 *   path: bytes; argv, envp: sequences of bytes; stderr_fd: a descriptor to put on 2, or -1;
 *   sigmask: the signals blocked in the child; sigdef: signals set to their default action;
 *   deathsig: the signal the child gets when the calling thread ends (0: none).
 * Raises OSError with the errno of a failed execve (the child is reaped first).
 */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE
#include <Python.h>

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILD_STACK (64 * 1024)

struct child_args {
    const char *path;
    char *const *argv;
    char *const *envp;
    int stderr_fd;
    sigset_t mask;
    sigset_t defaults;
    int deathsig;
    pid_t parent;
    volatile int error; /* written by the child before it exits: memory is shared */
};

static int child_main(void *raw) {
    struct child_args *a = raw;
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    /* No handler of the parent may run here (it would touch the parent's memory): a caught
     * signal goes back to its default, as execve would do anyway; ignored ones stay ignored
     * unless asked for. */
    for (int sig = 1; sig < _NSIG; sig++) {
        struct sigaction old;
        if (sig == SIGKILL || sig == SIGSTOP) continue;
        if (sigaction(sig, NULL, &old) != 0) continue; /* glibc's own (32, 33) are refused */
        if (sigismember(&a->defaults, sig) == 1 || (old.sa_handler != SIG_IGN && old.sa_handler != SIG_DFL))
            sigaction(sig, &dfl, NULL);
    }
    if (a->stderr_fd >= 0 && a->stderr_fd != 2) {
        if (dup2(a->stderr_fd, 2) < 0) goto fail;
    }
    if (a->deathsig) {
        if (prctl(PR_SET_PDEATHSIG, a->deathsig, 0, 0, 0) != 0) goto fail;
        if (getppid() != a->parent) { /* the parent died before the request took hold */
            a->error = ESRCH;
            _exit(127);
        }
    }
    if (sigprocmask(SIG_SETMASK, &a->mask, NULL) != 0) goto fail;
    execve(a->path, a->argv, a->envp);
fail:
    a->error = errno ? errno : EINVAL;
    _exit(127);
}

/* A NULL-terminated array of the bytes in seq (borrowed pointers; keep *holder alive). */
static char **byte_vector(PyObject *seq, PyObject **holder) {
    PyObject *fast = PySequence_Fast(seq, "argv and envp must be sequences of bytes");
    if (fast == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    char **out = PyMem_Calloc((size_t)n + 1, sizeof(char *));
    if (out == NULL) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
        if (!PyBytes_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "argv and envp must be sequences of bytes");
            PyMem_Free(out);
            Py_DECREF(fast);
            return NULL;
        }
        out[i] = PyBytes_AS_STRING(item);
        if (strlen(out[i]) != (size_t)PyBytes_GET_SIZE(item)) {
            PyErr_SetString(PyExc_ValueError, "embedded null byte");
            PyMem_Free(out);
            Py_DECREF(fast);
            return NULL;
        }
    }
    *holder = fast;
    return out;
}

static int signal_set(PyObject *seq, sigset_t *set) {
    sigemptyset(set);
    PyObject *fast = PySequence_Fast(seq, "signals must be a sequence of ints");
    if (fast == NULL) return -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast); i++) {
        long sig = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
        if (sig == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
        if (sig > 0 && sig < _NSIG) sigaddset(set, (int)sig);
    }
    Py_DECREF(fast);
    return 0;
}

static PyObject *spawn(PyObject *self, PyObject *args) {
    (void)self;
    const char *path;
    PyObject *argv_obj, *envp_obj, *mask_obj, *def_obj;
    int stderr_fd, deathsig;
    if (!PyArg_ParseTuple(args, "yOOiOOi:spawn", &path, &argv_obj, &envp_obj, &stderr_fd, &mask_obj, &def_obj,
                          &deathsig))
        return NULL;
    struct child_args a;
    memset(&a, 0, sizeof a);
    a.path = path;
    a.stderr_fd = stderr_fd;
    a.deathsig = deathsig;
    if (signal_set(mask_obj, &a.mask) < 0 || signal_set(def_obj, &a.defaults) < 0) return NULL;
    PyObject *argv_hold = NULL, *envp_hold = NULL;
    char **argv = byte_vector(argv_obj, &argv_hold);
    if (argv == NULL) return NULL;
    char **envp = byte_vector(envp_obj, &envp_hold);
    if (envp == NULL) {
        PyMem_Free(argv);
        Py_DECREF(argv_hold);
        return NULL;
    }
    a.argv = argv;
    a.envp = envp;
    a.parent = getpid();

    /* The child's stack, with a page below it that faults: with CLONE_VM an overflow would
     * otherwise write into the parent's memory. */
    long page = sysconf(_SC_PAGESIZE);
    char *stack = mmap(NULL, CHILD_STACK + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
                       -1, 0);
    pid_t pid = -1;
    int saved = 0;
    if (stack == MAP_FAILED || mprotect(stack, page, PROT_NONE) != 0) {
        saved = errno;
        if (stack != MAP_FAILED) munmap(stack, CHILD_STACK + page);
        stack = MAP_FAILED;
    } else {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pid = clone(child_main, stack + page + CHILD_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
        saved = errno;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        munmap(stack, CHILD_STACK + page);
    }
    PyMem_Free(argv);
    PyMem_Free(envp);
    Py_DECREF(argv_hold);
    Py_DECREF(envp_hold);
    if (pid < 0) {
        errno = saved;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    if (a.error) { /* the child did not reach its program: reap it, report why */
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        errno = a.error;
        return PyErr_SetFromErrnoWithFilename(PyExc_OSError, path);
    }
    return PyLong_FromLong((long)pid);
}

static PyMethodDef methods[] = {
    {"spawn", spawn, METH_VARARGS, "spawn(path, argv, envp, stderr_fd, sigmask, sigdef, deathsig) -> pid"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "guard._spawn", .m_size = -1, .m_methods = methods,
};

PyMODINIT_FUNC PyInit__spawn(void) { return PyModule_Create(&module); }
