//! Any program in a pseudo-terminal (an editor that needs one): started with its own
//! environment, its output drained on a background thread, keys written to it, killed with
//! SIGKILL when asked or when dropped.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};

pub struct Terminal {
    child: Box<dyn Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    _master: Box<dyn MasterPty + Send>,
    /// Everything the program wrote.
    pub output: Arc<Mutex<Vec<u8>>>,
}

impl Terminal {
    /// Starts `program ARGS` in `cwd` with `env` added (and `TERM=xterm`), on a 100x30 pty.
    pub fn start(program: &str, args: &[&OsStr], cwd: &Path, env: &[(&str, &OsStr)]) -> Terminal {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: 30,
                cols: 100,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("open a pty");
        let mut cmd = CommandBuilder::new(program);
        cmd.args(args);
        cmd.cwd(cwd);
        cmd.env("TERM", "xterm");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = pair.slave.spawn_command(cmd).expect("spawn in a pty");
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().expect("pty reader");
        let writer = pair.master.take_writer().expect("pty writer");
        let output = Arc::new(Mutex::new(Vec::new()));
        let log = output.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    return;
                }
                log.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Terminal {
            child,
            writer,
            _master: pair.master,
            output,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.process_id().expect("a pid") as i32
    }

    /// Types `bytes`.
    pub fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).expect("write to the pty");
        self.writer.flush().expect("flush the pty");
    }

    /// Waits until it ends (at most [`super::DEADLINE`]): its exit code.
    pub fn wait(&mut self) -> u32 {
        let child = &mut self.child;
        super::wait_for("the program in the pty to end", || {
            child.try_wait().expect("wait for the pty's program")
        })
        .exit_code()
    }

    /// SIGKILL, and waits until it is reaped (nothing it leaves behind is cleaned up).
    pub fn kill(&mut self) {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(self.pid()).expect("a pid"),
            rustix::process::Signal::KILL,
        );
        let _ = self.child.wait();
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        self.kill();
    }
}
