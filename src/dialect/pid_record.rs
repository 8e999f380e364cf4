//! Multi-line PID records, read whole: the lines after the PID say whose PID it is, and a PID
//! of another host must never be judged against this host's processes.
//!
//! The forms, each as its writer's own source writes it:
//! - py-filelock's `SoftFileLock` (3.x and 4.x): `pid\nhost\n`, and in 4.x a third line, the
//!   owner's start token `(boot_id << 64) | starttime` in decimal (`_identity/_process.py`). The
//!   host is `socket.gethostname()` with bytes outside `!`..`~` (and `?`) escaped as `?xx`, and
//!   `?pidns-<inode hex>` appended outside the initial PID namespace (`_identity/_host.py`).
//! - py-filelock 4.x markers: `filelock/2\n` then `key=value` lines (`pid`, `host`, `mode`,
//!   `token`, `duration`, `start`), same host and start encodings.
//! - GnuPG's dotlock: the PID as `%10d\n`, then the node name and a newline.
//! - Qt's `QLockFile`: `pid\napp\nhost\nmachine-id\nboot-id\n` (Qt 5.10+; older Qt wrote the
//!   first three lines only). Qt's own rule: same host and machine, another boot → stale; same
//!   boot: the PID alive and that application.
//!
//! Anything else after a PID line is kept as [`Form::Unread`]: its PID is checked, but the
//! lines may name another host, so it is never `stale` on the PID alone.

use super::common;

/// Which writer's format a record is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `pid\nhost\n` (py-filelock `SoftFileLock`, GnuPG dotlock), with py-filelock 4.x's start
    /// token as an optional third line.
    PidHost,
    /// py-filelock 4.x's `filelock/2` marker.
    FilelockMarker,
    /// Qt's `QLockFile`.
    Qt,
    /// A PID followed by lines this tool does not read.
    Unread,
}

impl Form {
    pub fn describe(self) -> &'static str {
        match self {
            Form::PidHost => "PID and host lines (py-filelock SoftFileLock, GnuPG dotlock)",
            Form::FilelockMarker => "a py-filelock marker (filelock/2)",
            Form::Qt => "a Qt QLockFile record",
            Form::Unread => "a PID followed by lines of unknown meaning",
        }
    }
}

/// A multi-line PID record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PidRecord {
    pub pid: i64,
    pub form: Option<Form>,
    /// The host as written (escaped for display).
    pub host_written: Option<String>,
    /// The host name it decodes to.
    pub hostname: Option<String>,
    /// The writer's PID namespace inode, when the record names it.
    pub pid_ns: Option<u64>,
    /// Qt: the application name (the executable's file name).
    pub app: Option<String>,
    /// Qt: the machine id (`/etc/machine-id`).
    pub machine_id: Option<String>,
    /// The boot id, from Qt's record or py-filelock's start token.
    pub boot_id: Option<String>,
    /// The owner's start time in ticks since boot (py-filelock's start token).
    pub start_ticks: Option<u64>,
    /// The lines this tool does not read (`Form::Unread`), escaped.
    pub unread: Option<String>,
}

impl PidRecord {
    pub fn form(&self) -> Form {
        self.form.unwrap_or(Form::Unread)
    }
}

/// Parses the lines after a PID line. `text` is the whole content (valid UTF-8); returns
/// `None` when the content is a single PID line.
pub fn parse(text: &str) -> Option<Result<PidRecord, String>> {
    if let Some(rest) = text.strip_prefix("filelock/2\n") {
        return Some(parse_marker(rest));
    }
    let lines: Vec<&str> = text
        .trim_end_matches(['\n', '\r', '\0', ' ', '\t'])
        .split('\n')
        .map(|l| l.trim_end_matches('\r'))
        .collect();
    if lines.len() < 2 {
        return None;
    }
    Some(parse_lines(&lines, text))
}

fn parse_lines(lines: &[&str], text: &str) -> Result<PidRecord, String> {
    let pid = common::parse_pid(lines[0])?;
    let mut rec = PidRecord {
        pid,
        ..PidRecord::default()
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match lines {
        // pid, host (GnuPG; SoftFileLock without a start token).
        [_, host] if host_like(host) && !digits(host) => {
            rec.form = Some(Form::PidHost);
            set_filelock_host(&mut rec, host);
        }
        // pid, host, start token (SoftFileLock 4.x).
        [_, host, token] if host_like(host) && !digits(host) && digits(token) => {
            rec.form = Some(Form::PidHost);
            set_filelock_host(&mut rec, host);
            set_start_token(&mut rec, token)?;
        }
        // Qt: pid, app, host[, machine id[, boot id]].
        [_, app, host, ids @ ..]
            if ids.len() <= 2 && !app.is_empty() && host_like(host) && !digits(host) =>
        {
            rec.form = Some(Form::Qt);
            rec.app = Some(common::field(app));
            rec.hostname = Some(common::field(host));
            rec.host_written = rec.hostname.clone();
            if let Some(m) = ids.first().map(|m| m.trim()).filter(|m| !m.is_empty()) {
                rec.machine_id = Some(common::field(m));
            }
            if let Some(b) = ids.get(1).map(|b| b.trim()).filter(|b| !b.is_empty()) {
                rec.boot_id = Some(common::field(b));
            }
        }
        _ => {
            rec.form = Some(Form::Unread);
            let rest = &text[text.find('\n').map_or(text.len(), |i| i + 1)..];
            rec.unread = Some(common::excerpt(rest.as_bytes()));
        }
    }
    Ok(rec)
}

fn parse_marker(rest: &str) -> Result<PidRecord, String> {
    let mut rec = PidRecord {
        form: Some(Form::FilelockMarker),
        ..PidRecord::default()
    };
    let mut pid = None;
    for line in rest.lines() {
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!(
                "{} is not a key=value line of a filelock/2 marker",
                common::excerpt(line.as_bytes())
            ));
        };
        match key {
            "pid" => pid = Some(common::parse_pid(value)?),
            "host" => set_filelock_host(&mut rec, value),
            "start" => set_start_token(&mut rec, value)?,
            _ => {}
        }
    }
    rec.pid = pid.ok_or("the filelock/2 marker has no pid= line")?;
    if rec.hostname.is_none() {
        return Err("the filelock/2 marker has no host= line".into());
    }
    Ok(rec)
}

/// A line that can be a host name as these writers write it: not empty, no blanks or
/// control characters, not absurdly long.
fn host_like(s: &str) -> bool {
    !s.is_empty() && s.len() <= 255 && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// Sets the host from py-filelock's encoding: `?xx` escapes and a `?pidns-<hex>` suffix.
fn set_filelock_host(rec: &mut PidRecord, written: &str) {
    rec.host_written = Some(common::field(written));
    let (name, ns) = match written.rsplit_once("?pidns-") {
        Some((name, hex)) => match u64::from_str_radix(hex, 16) {
            Ok(ns) => (name, Some(ns)),
            Err(_) => (written, None),
        },
        None => (written, None),
    };
    rec.pid_ns = ns;
    let decoded = if name == "?" {
        String::new()
    } else {
        unescape(name)
    };
    rec.hostname = Some(common::field(&decoded));
}

/// Undoes py-filelock's `?xx` escapes (bytes outside `!`..`~`, and `?` itself).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'?'
            && let Some(hex) = s.get(i + 1..i + 3)
            && let Ok(v) = u8::from_str_radix(hex, 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Sets the boot id and start ticks from py-filelock's start token
/// `(boot_id as a 128-bit integer << 64) | starttime`; a boot id of 0 means "not known".
fn set_start_token(rec: &mut PidRecord, token: &str) -> Result<(), String> {
    let t: u128 = match token.parse::<u128>() {
        Ok(t) => t,
        // Wider than 128 bits only when the boot id fills all of its 128: keep the low bits.
        Err(_) => {
            let big = token.trim_start_matches('0');
            if big.is_empty() || !big.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!(
                    "{} is not a start token",
                    common::excerpt(token.as_bytes())
                ));
            }
            return set_wide_start_token(rec, big);
        }
    };
    rec.start_ticks = Some((t & u64::MAX as u128) as u64);
    let boot = t >> 64;
    if boot != 0 {
        rec.boot_id = Some(uuid(boot));
    }
    Ok(())
}

/// A start token over 128 bits: decimal long division by 2^64 gives the boot id and ticks.
fn set_wide_start_token(rec: &mut PidRecord, digits: &str) -> Result<(), String> {
    // Base-10^9 limbs, most significant first.
    let mut limbs: Vec<u64> = Vec::new();
    let first = digits.len() % 9;
    if first > 0 {
        limbs.push(digits[..first].parse().map_err(|_| "bad start token")?);
    }
    for i in (first..digits.len()).step_by(9) {
        limbs.push(digits[i..i + 9].parse().map_err(|_| "bad start token")?);
    }
    // Divide by 2^64 as two divisions by 2^32, collecting the remainder.
    let mut rem_total: u64 = 0;
    for shift in [0u32, 32] {
        let mut rem: u64 = 0;
        for limb in limbs.iter_mut() {
            let cur = rem as u128 * 1_000_000_000 + *limb as u128;
            *limb = (cur >> 32) as u64;
            rem = (cur & 0xFFFF_FFFF) as u64;
        }
        rem_total |= rem << shift;
    }
    // What is left, in base 10^9, is the boot id: rebuild it as u128 (it fits: 128 bits).
    let mut boot: u128 = 0;
    for limb in limbs {
        boot = boot
            .checked_mul(1_000_000_000)
            .and_then(|b| b.checked_add(limb as u128))
            .ok_or("the start token is too long")?;
    }
    rec.start_ticks = Some(rem_total);
    if boot != 0 {
        rec.boot_id = Some(uuid(boot));
    }
    Ok(())
}

/// A 128-bit value as a boot id: `8-4-4-4-12` lower-case hex.
fn uuid(v: u128) -> String {
    let h = format!("{v:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(text: &str) -> PidRecord {
        parse(text).expect("a record").expect("parses")
    }

    #[test]
    fn a_single_pid_line_is_no_record() {
        assert!(parse("4242\n").is_none());
        assert!(parse("      4242\n").is_none());
    }

    #[test]
    fn reads_softfilelock_records() {
        // Written by filelock 4.3.1 on host "vm": the token holds the boot id and start time.
        let r = rec("28031\nvm\n455110678386539072591396876125194031343008859351341414533\n");
        assert_eq!(r.form(), Form::PidHost);
        assert_eq!((r.pid, r.hostname.as_deref()), (28031, Some("vm")));
        // (as Python computes it: token >> 64 and token & (2**64 - 1))
        assert_eq!(r.start_ticks, Some(80005));
        assert_eq!(
            r.boot_id.as_deref(),
            Some("128f93c2-a81c-40dd-aa25-b85b52c71466")
        );
        // A token that fits in 128 bits (a boot id with its high bits clear).
        let r = rec(&format!("1\nvm\n{}\n", (5u128 << 64) | 77));
        assert_eq!(r.start_ticks, Some(77));
        assert_eq!(
            r.boot_id.as_deref(),
            Some("00000000-0000-0000-0000-000000000005")
        );
        // Boot id 0: not known, the start time alone.
        let r = rec("1\nvm\n77\n");
        assert_eq!((r.start_ticks, r.boot_id), (Some(77), None));

        let r = rec("4242\nbuild-7?pidns-effffffd\n");
        assert_eq!(r.hostname.as_deref(), Some("build-7"));
        assert_eq!(r.pid_ns, Some(0xEFFF_FFFD));
        assert_eq!(r.start_ticks, None);
        assert_eq!(rec("1\nmy?20box\n").hostname.as_deref(), Some("my box"));
        assert_eq!(rec("1\n?\n").hostname.as_deref(), Some(""));
    }

    #[test]
    fn reads_a_start_token_wider_than_128_bits() {
        // A boot id with its top bit set makes the token 192 bits wide.
        let boot: u128 = 0xf000_0000_0000_0000_0000_0000_0000_0001;
        let ticks: u64 = 123_456;
        // boot * 2^64 + ticks, in decimal, computed by hand in base 10^9.
        let mut limbs: Vec<u128> = vec![0];
        let mul_add = |limbs: &mut Vec<u128>, m: u128, a: u128| {
            let mut carry = a;
            for l in limbs.iter_mut().rev() {
                let v = *l * m + carry;
                *l = v % 1_000_000_000;
                carry = v / 1_000_000_000;
            }
            while carry > 0 {
                limbs.insert(0, carry % 1_000_000_000);
                carry /= 1_000_000_000;
            }
        };
        for byte in boot.to_be_bytes() {
            mul_add(&mut limbs, 256, byte as u128);
        }
        for byte in ticks.to_be_bytes() {
            mul_add(&mut limbs, 256, byte as u128);
        }
        let mut dec = limbs[0].to_string();
        for l in &limbs[1..] {
            dec.push_str(&format!("{l:09}"));
        }
        let r = rec(&format!("7\nvm\n{dec}\n"));
        assert_eq!(r.start_ticks, Some(ticks));
        assert_eq!(r.boot_id, Some(uuid(boot)));
    }

    #[test]
    fn reads_filelock_markers() {
        let r =
            rec("filelock/2\npid=77\nhost=ci-3\nmode=lease\ntoken=ab\nduration=30.0\nstart=1234\n");
        assert_eq!(r.form(), Form::FilelockMarker);
        assert_eq!((r.pid, r.hostname.as_deref()), (77, Some("ci-3")));
        assert_eq!(r.start_ticks, Some(1234));
        assert!(parse("filelock/2\npid=77\n").unwrap().is_err());
        assert!(parse("filelock/2\nhost=x\n").unwrap().is_err());
    }

    #[test]
    fn reads_gnupg_and_qt_records() {
        let r = rec("     31337\nworkstation\n");
        assert_eq!(r.form(), Form::PidHost);
        assert_eq!((r.pid, r.hostname.as_deref()), (31337, Some("workstation")));

        let r = rec(
            "4242\nkate\nlaptop\n3d1219c7c4c5404aaa1f6d2a48adfda4\nbe32e849-7add-4ace-b77d-830856e3b48e\n",
        );
        assert_eq!(r.form(), Form::Qt);
        assert_eq!(r.app.as_deref(), Some("kate"));
        assert_eq!(r.hostname.as_deref(), Some("laptop"));
        assert_eq!(
            r.machine_id.as_deref(),
            Some("3d1219c7c4c5404aaa1f6d2a48adfda4")
        );
        assert_eq!(
            r.boot_id.as_deref(),
            Some("be32e849-7add-4ace-b77d-830856e3b48e")
        );
        // Qt before 5.10: three lines.
        let r = rec("4242\nkate\nlaptop\n");
        assert_eq!(r.form(), Form::Qt);
        assert_eq!(r.machine_id, None);
    }

    #[test]
    fn other_lines_are_kept_unread() {
        let r = rec("4242\n5432\n");
        assert_eq!(r.form(), Form::Unread);
        assert!(r.unread.unwrap().contains("5432"));
        let r = rec("4242\nsome words here\n");
        assert_eq!(r.form(), Form::Unread);
        assert!(parse("x\nhost\n").unwrap().is_err());
    }
}
