//! Hand-written engine records and the facts of this host they name: what a holder of this
//! host and boot writes, with fields changed or added by the test. Shared by the engine's
//! tests and the app's test suite.

/// This host's name.
pub fn hostname() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

/// This kernel's boot id.
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .expect("boot id")
        .trim()
        .to_string()
}

/// A hand-written engine record of this host and boot (JSON object, newline-terminated).
/// `fields` are extra or overriding `"key": value` pairs in JSON syntax.
pub fn engine_record(pid: i64, fields: &[(&str, String)]) -> String {
    let mut map = serde_json::Map::new();
    map.insert("pid".into(), pid.into());
    map.insert("hostname".into(), hostname().into());
    map.insert("boot_id".into(), boot_id().into());
    map.insert(
        "created_at".into(),
        jiff::Timestamp::now().to_string().into(),
    );
    map.insert("kernel_lock".into(), true.into());
    map.insert("token".into(), "0123456789abcdef0123456789abcdef".into());
    map.insert("tool".into(), "locksmith/0.1.0".into());
    for (k, v) in fields {
        map.insert(
            (*k).into(),
            serde_json::from_str(v).expect("field value is JSON"),
        );
    }
    let mut s = serde_json::Value::Object(map).to_string();
    s.push('\n');
    s
}

/// RFC 3339 time `secs` seconds ago, as a JSON string (for [`engine_record`]'s fields).
pub fn ago(secs: i64) -> String {
    let t = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(secs);
    format!("\"{t}\"")
}

/// Files that are not lock records, by name and content: notes, an empty file of this boot, a
/// record whose PID is not a number. Taking a lock there fails at once and leaves them alone.
pub const NOT_RECORDS: [(&str, &[u8]); 3] = [
    ("notes.txt", b"my precious notes\n"),
    ("empty.lock", b""),
    (
        "bad.lock",
        br#"{"tool":"locksmith/0.1.0","pid":"x","token":"t"}"#,
    ),
];
