//! Starting a call's first process *inside* its cgroup: `clone3` with
//! `CLONE_INTO_CGROUP` (Linux 5.7), then `execve`, as std's `Command`
//! does in its own `clone3` path, but with the cgroup given; and, where
//! the runner hides its files from tools, inside the tools' namespaces
//! (`setns` before the working directory is looked up: two system calls,
//! where std's `Command` would need a `pre_exec` hook and lose its
//! `posix_spawn` path).
//!
//! The fast path of [`super`]; its plain twin is [`super::command`] (std's
//! `Command`, the process moving itself into the cgroup), and a test there
//! starts the same process both ways and compares what it sees. Why it is
//! worth its `unsafe` (BENCHMARKS.md, "clone3 into the call's cgroup", has
//! the figures): a *move* into a cgroup takes the write side of the
//! kernel's `cgroup_threadgroup_rwsem`, and unless cgroup2 is mounted with
//! `favordynmods` (a host setting most hosts do not have) that waits for an
//! RCU grace period whenever no other move happened in the last few
//! milliseconds. An agent's calls come between model turns, so nearly every
//! call would pay it. A process *created* in the cgroup takes only the read
//! side, as every fork does. It also saves the `sh` wrapper's extra `exec`
//! for programs that are not bash, and the script prefix for those that
//! are. No maintained crate makes this system call: rustix leaves `clone`
//! and `clone3` out on purpose, nix has only the old `clone`, and std's
//! `Command` cannot be given a cgroup.
//!
//! Built only for x86_64 Linux with the `clone3` feature (on by default;
//! the trampoline is written for that architecture). Where `clone3` is
//! refused (kernels before 5.7, seccomp profiles that answer `ENOSYS`, as
//! some container runtimes' do), [`spawn`] answers [`Error::Unavailable`]
//! and the caller takes the plain path.
//!
//! This is the runner's one module with `unsafe` (the lint is `deny`,
//! allowed here only; a test keeps it so). Between `clone3` and `execve`
//! the child shares the runner's memory and runs on a stack of its own
//! (`CLONE_VM | CLONE_VFORK`, as glibc's `posix_spawn`; the calling thread
//! waits): it makes async-signal-safe system calls only, on data prepared
//! before the clone (paths, argv, envp, fds), writes nothing but its own
//! stack and, when it fails, one `errno` slot the waiting thread reads
//! after it resumes, and no signal handler of the runner's can run in it.
//! No allocation, no locks, no panics.
#![allow(unsafe_code)]

use std::borrow::Cow;
use std::cell::Cell;
use std::ffi::{CStr, CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::OnceLock;

use nix::errno::Errno;
use nix::libc;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::net::unix::pipe;

/// From `linux/sched.h` (libc's `CLONE_INTO_CGROUP` is a deprecated `c_int`
/// too narrow for it).
const CLONE_VM: u64 = 0x100;
const CLONE_PIDFD: u64 = 0x1000;
const CLONE_VFORK: u64 = 0x4000;
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
/// Linux 5.5, so present wherever `CLONE_INTO_CGROUP` (5.7) is.
const CLONE_CLEAR_SIGHAND: u64 = 0x1_0000_0000;

/// The child's stack while it shares our memory (until `execve`). What it
/// runs is a few small frames (`rt_sigaction`, `dup2`, `chdir`, `execve`):
/// 64 KiB is a wide margin, and costs nothing until touched.
const CHILD_STACK: usize = 64 * 1024;

thread_local! {
    /// A thread's child stack, between its calls: `CLONE_VFORK` holds the
    /// thread until the child is done with it, so one per thread is
    /// enough, and a call does not make a `malloc` large enough for glibc
    /// to consolidate its free lists.
    static SPARE_STACK: Cell<Vec<u128>> = const { Cell::new(Vec::new()) };
}

/// `struct clone_args` as of Linux 5.7 (`CLONE_ARGS_SIZE_VER2`, 88 bytes):
/// the first version with `cgroup`. Every field is a `u64` on every
/// architecture, so this layout is the kernel's everywhere.
#[repr(C)]
#[derive(Debug, Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// Set once `clone3` has been refused as a whole (not for one call's
/// reasons): later calls go straight to the self-join.
static REFUSED: AtomicBool = AtomicBool::new(false);

/// Whether [`spawn`] may work here (it has not been refused yet).
pub fn available() -> bool {
    !REFUSED.load(Ordering::Relaxed)
}

/// What to start.
#[derive(Debug)]
pub struct Request<'a> {
    /// The call cgroup's directory, open (`None`: the runner's cgroup).
    pub cgroup: Option<BorrowedFd<'a>>,
    /// Namespaces the child enters before it changes to `workdir` and
    /// `exec`s: a user namespace (first) and a mount namespace
    /// (`crate::exec::tool_view`).
    pub namespaces: Option<(Option<BorrowedFd<'a>>, BorrowedFd<'a>)>,
    /// The program's path (with a `/`: no PATH search here).
    pub program: &'a Path,
    /// `argv`, `argv[0]` included.
    pub argv: Vec<OsString>,
    /// The whole environment of the new process, as `NAME=value` entries
    /// (`crate::exec::environment::env_entry`); borrowed where they are the
    /// runner's own.
    pub env: Vec<Cow<'static, CStr>>,
    pub workdir: &'a Path,
    /// A pipe for stdin (else `/dev/null`).
    pub stdin: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// This way of starting is not possible here or now (no `clone3`, the
    /// cgroup could not be opened): start the process the other way.
    #[error("clone3 into the call's cgroup is not possible: {0}")]
    Unavailable(io::Error),
    /// The process could not be started (the program is missing, the
    /// working directory is not there…): the call fails, as it would have.
    #[error("{0}")]
    Spawn(io::Error),
}

/// A process started by [`spawn`]. Dropped before it was reaped, it is
/// killed (as `tokio::process::Command::kill_on_drop`) and reaped in the
/// background.
#[derive(Debug)]
pub struct Child {
    pid: Pid,
    /// `None` only while being dropped.
    pidfd: Option<AsyncFd<OwnedFd>>,
    status: Option<ExitStatus>,
    pub stdin: Option<pipe::Sender>,
    pub stdout: Option<pipe::Receiver>,
    pub stderr: Option<pipe::Receiver>,
}

/// Everything the child reads, made before the clone.
struct Prepared {
    program: CString,
    workdir: CString,
    /// Keep the strings that `argv` and `envp` point into alive.
    _strings: (Vec<CString>, Vec<Cow<'static, CStr>>),
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    /// `(from, to)`: the fds that become 0, 1 and 2.
    stdio: [(RawFd, RawFd); 3],
    /// The user and mount namespaces to enter, -1 for none.
    user_namespace: RawFd,
    mount_namespace: RawFd,
    /// The child's `errno` when it fails before `execve` succeeds; 0 until
    /// then. Shared memory instead of a close-on-exec pipe, as glibc's
    /// `posix_spawn` does: the parent reads it only after `CLONE_VFORK`
    /// resumed it, which the kernel does once the child has `execve`d or
    /// exited: no `pipe2`, `close`s and blocking `read` a call, whose reader
    /// would spin on the pipe's lock while `execve` released it.
    failure: AtomicI32,
}

/// Starts `request` inside its cgroup (where it names one) and its
/// namespaces (where it names them), with stdout and stderr piped, in a
/// process group of its own.
pub fn spawn(request: &Request<'_>) -> Result<Child, Error> {
    if !available() {
        return Err(Error::Unavailable(io::Error::from(
            io::ErrorKind::Unsupported,
        )));
    }
    // The pidfd and the pipes go on tokio's reactor: without one, use the
    // other way rather than start a process that could not be waited for.
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(Error::Unavailable(io::Error::other("no tokio runtime")));
    }
    let cgroup = request.cgroup;

    let (stdout_read, stdout_write) = output_pipe().map_err(Error::Spawn)?;
    let (stderr_read, stderr_write) = output_pipe().map_err(Error::Spawn)?;
    let (stdin_parent, stdin_child) = if request.stdin {
        let (read, write) = pipe_pair().map_err(Error::Spawn)?;
        (Some(write), Some(read))
    } else {
        (None, None)
    };
    // The child's three fds must not be 0, 1 or 2 already (a runner
    // started with those closed): a `dup2` onto one would overwrite
    // another before it is used.
    let stdin_child = stdin_child
        .map(above_stdio)
        .transpose()
        .map_err(Error::Spawn)?;
    let stdout_write = above_stdio(stdout_write).map_err(Error::Spawn)?;
    let stderr_write = above_stdio(stderr_write).map_err(Error::Spawn)?;
    let stdin_from = match &stdin_child {
        Some(read) => read.as_raw_fd(),
        None => dev_null().map_err(Error::Spawn)?,
    };

    let prepared = prepare(
        request,
        [
            (stdin_from, 0),
            (stdout_write.as_raw_fd(), 1),
            (stderr_write.as_raw_fd(), 2),
        ],
    )
    .map_err(Error::Spawn)?;

    // The child shares our memory and runs on a stack of its own until it
    // `execve`s (`CLONE_VM | CLONE_VFORK`, as glibc's `posix_spawn`), so
    // the runner's page tables are not copied for a process that replaces
    // them at once. This thread waits meanwhile. The stack is not zeroed: only the child writes it, and
    // nothing reads it. It is this thread's, kept for its next call.
    let mut stack = SPARE_STACK.try_with(Cell::take).unwrap_or_default();
    if stack.capacity() < CHILD_STACK / std::mem::size_of::<u128>() {
        stack = Vec::with_capacity(CHILD_STACK / std::mem::size_of::<u128>());
    }
    let mut pidfd: libc::c_int = -1;
    let into_cgroup = if cgroup.is_some() {
        CLONE_INTO_CGROUP
    } else {
        0
    };
    let mut args = CloneArgs {
        flags: CLONE_VM | CLONE_VFORK | CLONE_PIDFD | into_cgroup | CLONE_CLEAR_SIGHAND,
        pidfd: std::ptr::addr_of_mut!(pidfd) as u64,
        exit_signal: libc::SIGCHLD as u64,
        stack: stack.as_mut_ptr() as u64,
        stack_size: (stack.capacity() * std::mem::size_of::<u128>()) as u64,
        cgroup: cgroup.map_or(0, |cgroup| cgroup.as_raw_fd() as u64),
        ..CloneArgs::default()
    };
    // No signal handler may run in the child (on its small stack, in our
    // memory): the kernel starts it with every handled signal, glibc's own
    // included, at its default (`CLONE_CLEAR_SIGHAND`; ignored ones stay
    // ignored), and every signal is blocked in this thread until the clone
    // returns, so none is taken between the clone and that reset.
    let all: u64 = !0;
    let mut previous: u64 = 0;
    // SAFETY: two valid 8-byte kernel signal sets (`_NSIG` is 64 on x86_64).
    let blocked = unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            std::ptr::addr_of!(all),
            std::ptr::addr_of_mut!(previous),
            std::mem::size_of::<u64>(),
        )
    };
    if blocked != 0 {
        // `previous` is unknown: restoring it later could unblock signals
        // this thread had blocked. Start the other way instead.
        return Err(Error::Unavailable(io::Error::last_os_error()));
    }
    // SAFETY: `args` is a valid `clone_args`; its `pidfd` points at a live
    // `c_int` and its stack at a live, 16-byte aligned allocation (the
    // Vec's capacity) that outlives the child's use of it (`CLONE_VFORK`:
    // we resume once it has `execve`d or exited). The child runs `child_main`, which never
    // returns, on `prepared`, which is alive and only read.
    let pid = unsafe { clone3_into(&mut args, std::ptr::addr_of!(prepared)) };
    let clone_error = io::Error::last_os_error();
    // SAFETY: as above.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            std::ptr::addr_of!(previous),
            std::ptr::null_mut::<u64>(),
            std::mem::size_of::<u64>(),
        );
    }
    let _ = SPARE_STACK.try_with(|spare| spare.set(stack));
    if pid < 0 {
        let error = clone_error;
        // Refused for everyone (old kernel, seccomp, no pidfd) rather than
        // for this call (a full pid table is not worth remembering).
        let refused = matches!(
            error.raw_os_error(),
            Some(libc::ENOSYS | libc::EPERM | libc::EINVAL | libc::E2BIG | libc::EOPNOTSUPP)
        );
        if refused && !REFUSED.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                %error,
                "clone3 into a call's cgroup was refused: calls now move into their cgroup, which is slower without favordynmods (runner doctor: call cgroups)"
            );
        }
        return Err(Error::Unavailable(error));
    }
    let pid = Pid::from_raw(pid as libc::pid_t);
    // SAFETY: the kernel wrote a new pidfd, which nothing else owns, into
    // `pidfd` (CLONE_PIDFD on a successful clone).
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    // The parent's copies of the child's ends: their readers must see EOF
    // when the child's side closes.
    drop((stdin_child, stdout_write, stderr_write));
    // `CLONE_VFORK`: the child has `execve`d or exited by now, so this is
    // its last word on the matter.
    let failure = prepared.failure.load(Ordering::Acquire);
    drop(prepared);

    if failure != 0 {
        // The child failed before `execve` and exits at once: reap it.
        let _ = reap(&pidfd, WaitPidFlag::empty());
        return Err(Error::Spawn(io::Error::from_raw_os_error(failure)));
    }
    // The runner's runtimes all have their I/O driver (`enable_all`), so
    // registering cannot panic for want of one.
    // SAFETY: `pidfd` is an open fd owned by the `AsyncFd` from here on,
    // and an `OwnedFd` always answers the same raw fd.
    let registered = unsafe { AsyncFd::register_with_interest(pidfd, Interest::READABLE) };
    let pidfd = match registered {
        Ok(pidfd) => pidfd,
        Err(error) => {
            let (pidfd, error) = error.into_parts();
            let _ = kill(pid, Signal::SIGKILL);
            let _ = reap(&pidfd, WaitPidFlag::empty());
            return Err(Error::Spawn(error));
        }
    };
    // From here on, dropping `child` kills and reaps the process.
    let mut child = Child {
        pid,
        pidfd: Some(pidfd),
        status: None,
        stdin: None,
        stdout: None,
        stderr: None,
    };
    let pipes = (|| -> io::Result<()> {
        // Read ends of pipes made non-blocking by `output_pipe`: nothing
        // for tokio to check or set (three system calls each).
        child.stdout = Some(pipe::Receiver::from_owned_fd_unchecked(stdout_read)?);
        child.stderr = Some(pipe::Receiver::from_owned_fd_unchecked(stderr_read)?);
        child.stdin = stdin_parent.map(pipe::Sender::from_owned_fd).transpose()?;
        Ok(())
    })();
    match pipes {
        Ok(()) => Ok(child),
        // The program did start: say so (dropping `child` kills it).
        Err(error) => Err(Error::Spawn(io::Error::new(
            error.kind(),
            format!("started, but its output could not be read, so it was killed: {error}"),
        ))),
    }
}

fn prepare(request: &Request<'_>, stdio: [(RawFd, RawFd); 3]) -> io::Result<Prepared> {
    let program = c_string(request.program.as_os_str())?;
    let workdir = c_string(request.workdir.as_os_str())?;
    let args = request
        .argv
        .iter()
        .map(|arg| c_string(arg))
        .collect::<io::Result<Vec<_>>>()?;
    // Borrowed entries stay borrowed: a clone of the list, not of the text.
    let env = request.env.clone();
    let pointers = |items: &mut dyn Iterator<Item = *const libc::c_char>| {
        let mut pointers: Vec<*const libc::c_char> = items.collect();
        pointers.push(std::ptr::null());
        pointers
    };
    let argv = pointers(&mut args.iter().map(|arg| arg.as_ptr()));
    let envp = pointers(&mut env.iter().map(|entry| entry.as_ptr()));
    let (user_namespace, mount_namespace) = match request.namespaces {
        Some((user, mount)) => (user.map_or(-1, |user| user.as_raw_fd()), mount.as_raw_fd()),
        None => (-1, -1),
    };
    Ok(Prepared {
        program,
        workdir,
        _strings: (args, env),
        argv,
        envp,
        stdio,
        user_namespace,
        mount_namespace,
        failure: AtomicI32::new(0),
    })
}

fn c_string(text: &OsStr) -> io::Result<CString> {
    CString::new(text.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "a NUL byte in the program, an argument, the environment or the working directory",
        )
    })
}

/// The kernel's `struct sigaction` on x86_64 (not libc's): what the raw
/// `rt_sigaction` reads and writes.
#[repr(C)]
#[derive(Default)]
struct KernelSigaction {
    handler: libc::sighandler_t,
    flags: u64,
    restorer: usize,
    mask: u64,
}

/// `clone3(args)`; the child calls [`child_main`]`(prepared)` on the stack
/// `args` gives it. Returns the child's pid, or -1 with `errno` set.
///
/// In assembly because the child cannot return from a `syscall()` call on
/// a stack that has no frames (glibc's `clone` and `posix_spawn` do the
/// same). The registers the child reads (`r12`, `r13`) survive `syscall`.
///
/// # Safety
/// `args` must ask for a stack (see [`spawn`]) and `prepared` stay valid
/// and unchanged until the child has `execve`d or exited.
unsafe fn clone3_into(args: &mut CloneArgs, prepared: *const Prepared) -> libc::c_long {
    let result: libc::c_long;
    std::arch::asm!(
        "syscall",
        "test rax, rax",
        "jnz 2f",
        // The child: no caller frame (for unwinders), call, never return.
        "xor ebp, ebp",
        "mov rdi, r12",
        "call r13",
        "ud2",
        "2:",
        inlateout("rax") libc::SYS_clone3 => result,
        in("rdi") std::ptr::from_mut(args),
        in("rsi") std::mem::size_of::<CloneArgs>(),
        in("r12") prepared,
        in("r13") child_main as unsafe extern "C" fn(*const Prepared) -> !,
        lateout("rcx") _,
        lateout("r11") _,
        options(nostack),
    );
    if result < 0 {
        // The raw system call returns `-errno`; callers read `errno`.
        Errno::set_raw(-result as i32);
        return -1;
    }
    result
}

/// The new process, from `clone3` to `execve`, sharing the runner's
/// memory: async-signal-safe system calls on prepared data only, nothing
/// written but its own stack (and `errno`, in the waiting thread's slot).
/// On any failure it stores `errno` in `prepared.failure` and exits 127.
///
/// # Safety
/// Only as the entry point of the child of [`clone3_into`].
unsafe extern "C" fn child_main(prepared: *const Prepared) -> ! {
    let prepared = &*prepared;
    // The runner's handlers are already at their defaults here
    // (`CLONE_CLEAR_SIGHAND`), which spares the 64 `rt_sigaction` queries
    // `posix_spawn` makes while its parent waits. Ignored signals stay
    // ignored across `execve`; Rust ignores SIGPIPE, and std's `Command`
    // restores its default, so do we.
    let default = KernelSigaction::default();
    libc::syscall(
        libc::SYS_rt_sigaction,
        libc::SIGPIPE,
        std::ptr::addr_of!(default),
        std::ptr::null_mut::<KernelSigaction>(),
        std::mem::size_of::<u64>(),
    );
    if libc::setpgid(0, 0) != 0 {
        fail(prepared);
    }
    for (from, to) in prepared.stdio {
        // `dup2` clears close-on-exec on the new fd; the originals (≥ 3)
        // close at `execve`.
        if libc::dup2(from, to) < 0 {
            fail(prepared);
        }
    }
    // The user namespace first: it gives the right to enter the mount
    // namespace it owns. Entering a mount namespace moves the process to
    // its root, so the working directory is looked up after, in the
    // namespace the program will see.
    if prepared.user_namespace >= 0
        && libc::setns(prepared.user_namespace, libc::CLONE_NEWUSER) != 0
    {
        fail(prepared);
    }
    if prepared.mount_namespace >= 0
        && libc::setns(prepared.mount_namespace, libc::CLONE_NEWNS) != 0
    {
        fail(prepared);
    }
    if libc::chdir(prepared.workdir.as_ptr()) != 0 {
        fail(prepared);
    }
    // The program starts with no signal blocked, as std's children do.
    let none: u64 = 0;
    if libc::syscall(
        libc::SYS_rt_sigprocmask,
        libc::SIG_SETMASK,
        std::ptr::addr_of!(none),
        std::ptr::null_mut::<u64>(),
        std::mem::size_of::<u64>(),
    ) != 0
    {
        fail(prepared);
    }
    libc::execve(
        prepared.program.as_ptr(),
        prepared.argv.as_ptr(),
        prepared.envp.as_ptr(),
    );
    fail(prepared)
}

/// Leaves `errno` for the parent and exits (child side). An `errno` of 0
/// (no failure recorded) still reads as a failure: `ECHILD` stands in.
unsafe fn fail(prepared: &Prepared) -> ! {
    let errno = match Errno::last_raw() {
        0 => libc::ECHILD,
        errno => errno,
    };
    prepared.failure.store(errno, Ordering::Release);
    libc::_exit(127)
}

/// A close-on-exec pipe: `(read end, write end)`.
fn pipe_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?)
}

/// A close-on-exec pipe for the child's output: `(read end, write end)`,
/// the read end non-blocking for tokio's reactor, the write end blocking
/// as programs expect of their stdout (the two ends are separate open
/// files, each with its own flags).
fn output_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = pipe_pair()?;
    nix::fcntl::fcntl(
        &read,
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
    )?;
    Ok((read, write))
}

/// `/dev/null`, opened once (close-on-exec, numbered 3 or more): the
/// stdin of every call that has none, `dup2`ed by the child.
fn dev_null() -> io::Result<RawFd> {
    static NULL: OnceLock<OwnedFd> = OnceLock::new();
    if let Some(null) = NULL.get() {
        return Ok(null.as_raw_fd());
    }
    let opened = above_stdio(OwnedFd::from(std::fs::File::open("/dev/null")?))?;
    // Another thread may have got there first: its fd is kept, this one
    // closed.
    Ok(NULL.get_or_init(|| opened).as_raw_fd())
}

/// `fd`, or a close-on-exec duplicate of it numbered 3 or more.
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    let raw = nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(3))?;
    // SAFETY: `F_DUPFD_CLOEXEC` returned a new fd that nothing owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

impl Child {
    pub fn id(&self) -> u32 {
        self.pid.as_raw().unsigned_abs()
    }

    /// Waits for the process to exit (its pidfd turns readable) and reaps it.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(status);
            }
            let Some(pidfd) = &self.pidfd else {
                return Err(io::Error::other("the process is no longer tracked"));
            };
            let mut ready = pidfd.readable().await?;
            ready.clear_ready();
        }
    }

    /// The exit status if the process has exited (reaping it), else `None`.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        let Some(pidfd) = &self.pidfd else {
            return Ok(None);
        };
        let status = reap(pidfd.get_ref(), WaitPidFlag::WNOHANG)?;
        self.status = status;
        Ok(status)
    }

    /// SIGKILL, unless it has been reaped (its pid may be another's now).
    pub fn start_kill(&mut self) -> io::Result<()> {
        if self.status.is_none() {
            kill(self.pid, Signal::SIGKILL)?;
        }
        Ok(())
    }
}

/// `waitid` on a pidfd, as an exit status (`None`: still running).
fn reap(pidfd: &OwnedFd, extra: WaitPidFlag) -> io::Result<Option<ExitStatus>> {
    loop {
        match waitid(Id::PIDFd(pidfd.as_fd()), WaitPidFlag::WEXITED | extra) {
            Ok(WaitStatus::Exited(_, code)) => {
                return Ok(Some(ExitStatus::from_raw((code & 0xff) << 8)))
            }
            Ok(WaitStatus::Signaled(_, signal, core)) => {
                let core = if core { 0x80 } else { 0 };
                return Ok(Some(ExitStatus::from_raw(signal as i32 | core)));
            }
            Ok(_) => return Ok(None),
            Err(Errno::EINTR) => continue,
            Err(error) => return Err(error.into()),
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.status.is_some() {
            return;
        }
        let _ = self.start_kill();
        let Some(pidfd) = self.pidfd.take() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    loop {
                        match reap(pidfd.get_ref(), WaitPidFlag::WNOHANG) {
                            Ok(None) => match pidfd.readable().await {
                                Ok(mut ready) => ready.clear_ready(),
                                Err(_) => return,
                            },
                            _ => return,
                        }
                    }
                });
            }
            // SIGKILL was sent: the wait is short.
            Err(_) => {
                let _ = reap(pidfd.get_ref(), WaitPidFlag::empty());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;
    use crate::exec::cgroup::CallGroup;
    use crate::exec::environment::env_entry;

    fn request<'a>(group: &'a CallGroup, workdir: &'a Path, script: &str) -> Request<'a> {
        Request {
            cgroup: Some(group.dir_fd().expect("the call cgroup's directory is open")),
            namespaces: None,
            program: Path::new("/bin/sh"),
            argv: vec!["sh".into(), "-c".into(), script.into()],
            env: [("PATH", "/usr/bin:/bin"), ("X", "a b")]
                .into_iter()
                .map(|(name, value)| {
                    Cow::Owned(env_entry(name.as_ref(), value.as_ref()).expect("no NUL"))
                })
                .collect(),
            workdir,
            stdin: false,
        }
    }

    async fn output(mut child: Child) -> (String, String, ExitStatus) {
        let (mut out, mut err) = (String::new(), String::new());
        let mut stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr = child.stderr.take().expect("stderr is piped");
        let (read_out, read_err) = tokio::join!(
            stdout.read_to_string(&mut out),
            stderr.read_to_string(&mut err)
        );
        read_out.expect("stdout reads");
        read_err.expect("stderr reads");
        let status = child.wait().await.expect("the child is reaped");
        (out, err, status)
    }

    /// Where this machine lets us make call cgroups (else the test has
    /// nothing to show: it says so and passes, as the process layer's do).
    fn group() -> Option<CallGroup> {
        let group = CallGroup::create();
        if let Some(why) = crate::exec::cgroup::why_no_call_cgroup() {
            eprintln!("skipped: {why}");
        }
        group
    }

    #[tokio::test]
    async fn the_process_starts_inside_the_cgroup_with_what_was_asked() {
        let Some(group) = group() else { return };
        let workdir = tempfile::tempdir().expect("tempdir");
        let script = r#"cat /proc/self/cgroup | grep '^0::'; echo "$X"; pwd; ls /proc/self/fd | sort -n | tr '\n' ' '; echo; grep SigIgn /proc/self/status; [ "$(cut -d' ' -f5 /proc/$$/stat)" = $$ ] && echo own-group; readlink /proc/self/fd/0; echo oops >&2; exit 3"#;
        let child = spawn(&request(&group, workdir.path(), script)).expect("clone3 works here");
        assert!(child.id() > 0);
        let (out, err, status) = output(child).await;
        // Again, on this thread's kept child stack and the kept /dev/null.
        let again = spawn(&request(&group, workdir.path(), script)).expect("clone3 works again");
        assert_eq!(output(again).await, (out.clone(), err.clone(), status));
        let lines: Vec<&str> = out.lines().collect();
        let name = group
            .path()
            .file_name()
            .and_then(|n| n.to_str())
            .expect("name");
        assert!(lines[0].ends_with(name), "{out}");
        assert_eq!(lines[1], "a b");
        assert_eq!(
            Path::new(lines[2]).canonicalize().ok(),
            workdir.path().canonicalize().ok()
        );
        // What std's `Command` gives a child: the same fds (0–2, the one
        // `ls` opens, and whatever this test process inherited without
        // close-on-exec: nothing of ours leaked) and the same ignored
        // standard signals (SIGPIPE not among them, though Rust ignores it
        // here). glibc's `posix_spawn` also ignores its own internal
        // real-time signals in the child, which bash resets anyway: those
        // are not compared.
        let reference = std::process::Command::new("/bin/sh")
            .args([
                "-c",
                r#"ls /proc/self/fd | sort -n | tr '\n' ' '; echo; grep SigIgn /proc/self/status"#,
            ])
            .output()
            .expect("sh runs");
        let reference = String::from_utf8_lossy(&reference.stdout).into_owned();
        let reference: Vec<&str> = reference.lines().collect();
        assert_eq!(lines[3], reference[0], "{out}");
        let standard = |line: &str| {
            line.strip_prefix("SigIgn:\t")
                .and_then(|mask| u64::from_str_radix(mask, 16).ok())
                .map(|mask| mask & 0x7fff_ffff)
                .expect("a signal mask")
        };
        assert_eq!(standard(lines[4]), standard(reference[1]), "{out}");
        assert_eq!(standard(lines[4]) & (1 << (libc::SIGPIPE - 1)), 0, "{out}");
        assert_eq!(lines[5], "own-group", "{out}");
        assert_eq!(lines[6], "/dev/null", "{out}");
        assert_eq!(err, "oops\n");
        assert_eq!(status.code(), Some(3));
    }

    #[tokio::test]
    async fn a_failed_start_is_an_error_and_a_signal_is_a_signal() {
        let Some(group) = group() else { return };
        let workdir = tempfile::tempdir().expect("tempdir");
        let mut missing = request(&group, workdir.path(), "true");
        missing.program = Path::new("/nonexistent/program");
        match spawn(&missing) {
            Err(Error::Spawn(error)) => assert_eq!(error.kind(), io::ErrorKind::NotFound),
            other => panic!("expected a spawn error, got {other:?}"),
        }
        let gone = workdir.path().join("gone");
        let mut no_dir = request(&group, &gone, "true");
        no_dir.workdir = &gone;
        assert!(matches!(spawn(&no_dir), Err(Error::Spawn(_))));

        let child = spawn(&request(&group, workdir.path(), "kill -9 $$")).expect("starts");
        let (_, _, status) = output(child).await;
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9)
        );
    }

    #[tokio::test]
    async fn stdin_is_piped_when_asked_and_a_dropped_child_is_killed() {
        let Some(group) = group() else { return };
        let workdir = tempfile::tempdir().expect("tempdir");
        let mut asked = request(&group, workdir.path(), "cat");
        asked.stdin = true;
        let mut child = spawn(&asked).expect("starts");
        let mut stdin = child.stdin.take().expect("stdin is piped");
        tokio::io::AsyncWriteExt::write_all(&mut stdin, b"hello")
            .await
            .expect("writes");
        drop(stdin);
        let (out, _, status) = output(child).await;
        assert_eq!((out.as_str(), status.code()), ("hello", Some(0)));

        let child = spawn(&request(&group, workdir.path(), "sleep 30")).expect("starts");
        let pid = Pid::from_raw(child.id() as i32);
        drop(child);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        // Reaped in the background: the pid stops existing.
        while kill(pid, None).is_ok() {
            assert!(
                std::time::Instant::now() < deadline,
                "the dropped child still runs"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
}
