//! The terminal UI in a pseudo-terminal: the real binary started in a pty, its screen read
//! through a vt100 parser on a background thread (and its raw output kept), keys and mouse
//! reports written to it. Every wait has a deadline; the UI is killed when dropped.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{Child, MasterPty};

use super::{DEADLINE, Env, quiet, spawn_in_pty};

/// The terminal's size when the UI starts.
pub const ROWS: u16 = 30;
pub const COLS: u16 = 140;

/// The UI running in a pty; killed when dropped. It judges for as long as it runs, on a
/// quiet host (see [`quiet`]).
pub struct Ui {
    child: Box<dyn Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    pub screen: Arc<Mutex<vt100::Parser>>,
    /// Everything the UI wrote, raw (for sequences the screen does not show).
    raw: Arc<Mutex<Vec<u8>>>,
    master: Box<dyn MasterPty + Send>,
    _judging: quiet::Judging,
}

impl Ui {
    pub fn start(env: &Env, args: &[&Path], extra_env: &[(&str, &str)]) -> Ui {
        let judging = quiet::judging();
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let (child, master) = spawn_in_pty(env, &args, extra_env, ROWS, COLS);
        let mut reader = master.try_clone_reader().expect("pty reader");
        let writer = master.take_writer().expect("pty writer");
        let size = |n: u16| std::num::NonZeroU16::new(n).expect("a non-zero size");
        let screen = Arc::new(Mutex::new(vt100::Parser::new(size(ROWS), size(COLS), 0)));
        let feed = screen.clone();
        let raw = Arc::new(Mutex::new(Vec::new()));
        let log = raw.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        log.lock().unwrap().extend_from_slice(&buf[..n]);
                        feed.lock().unwrap().process(&buf[..n]);
                    }
                }
            }
        });
        Ui {
            child,
            writer,
            screen,
            raw,
            master,
            _judging: judging,
        }
    }

    /// Resizes the terminal (the UI gets SIGWINCH).
    pub fn resize(&mut self, rows: u16, cols: u16) {
        let size = |n: u16| std::num::NonZeroU16::new(n).expect("a non-zero size");
        self.screen.lock().unwrap().set_size(size(rows), size(cols));
        self.master
            .resize(portable_pty::PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("resize the pty");
    }

    /// Waits until the raw output holds `needle`.
    pub fn wait_for_raw(&self, what: &str, needle: &[u8]) {
        let start = Instant::now();
        while !self
            .raw
            .lock()
            .unwrap()
            .windows(needle.len())
            .any(|w| w == needle)
        {
            assert!(
                start.elapsed() < DEADLINE,
                "timed out waiting for {what}; the screen:\n{}",
                self.contents()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Everything the UI wrote so far, raw.
    pub fn raw(&self) -> Vec<u8> {
        self.raw.lock().unwrap().clone()
    }

    /// A mouse event as an SGR report (`button` 0 is a left press, 64/65 the wheel), at a
    /// 0-based cell.
    pub fn mouse(&mut self, button: u8, col: u16, row: u16) {
        self.send(&format!("\x1b[<{button};{};{}M", col + 1, row + 1));
        if button < 64 {
            self.send(&format!("\x1b[<{button};{};{}m", col + 1, row + 1));
        }
    }

    pub fn contents(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    /// Waits until the screen shows something `ok` accepts; fails with the screen after the
    /// deadline.
    pub fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let text = self.contents();
            if ok(&text) {
                return text;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "timed out waiting for {what}; the screen:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn send(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    /// Waits for the process to exit and returns its exit code.
    pub fn wait_exit(&mut self) -> u32 {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("poll the UI process") {
                return status.exit_code();
            }
            assert!(
                start.elapsed() < DEADLINE,
                "the UI did not exit; the screen:\n{}",
                self.contents()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Ui {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
