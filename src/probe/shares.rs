//! Directories this host serves to other machines, where a program there may write a lock with
//! its own PIDs and host: an NFS export (the kernel server's table, or NFS-Ganesha's
//! configuration), a writable Samba share, a directory a virtual machine is given (virtiofsd's
//! shared directory, QEMU's 9p `-virtfs` or `-fsdev`). A file there is judged as on a network
//! file system: a PID it names may be another machine's, so its absence here proves nothing.
//!
//! Read from what configures the servers (root's files) and from the running servers' command
//! lines (the configuration file a running `smbd` or `ganesha.nfsd` was given, the directory a
//! `virtiofsd` or `qemu` serves). A directory is counted as shared whether its server runs now
//! or not: a client's program keeps its lock while its server restarts.

use std::path::{Path, PathBuf};

/// A directory other machines may write in, and what serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Share {
    /// Canonical here.
    pub dir: PathBuf,
    /// `NFS export /srv/data`, `Samba share [public] at /srv/public`, ...
    pub what: String,
}

/// Every directory this host serves to other machines.
#[derive(Debug, Clone, Default)]
pub struct Shares(Vec<Share>);

impl Shares {
    /// Reads them now.
    #[cfg(target_os = "linux")]
    pub fn read() -> Shares {
        let mut found: Vec<(PathBuf, String)> = Vec::new();
        let mut exports = std::fs::read("/proc/fs/nfsd/exports")
            .or_else(|_| std::fs::read("/var/lib/nfs/etab"))
            .unwrap_or_default();
        // What the server exports when it starts, if it is installed.
        if Path::new("/usr/sbin/exportfs").exists() {
            let mut files = vec![PathBuf::from("/etc/exports")];
            if let Ok(d) = std::fs::read_dir("/etc/exports.d") {
                files.extend(
                    d.flatten()
                        .map(|e| e.path())
                        .filter(|p| p.extension().is_some_and(|x| x == "exports")),
                );
            }
            for f in files {
                exports.push(b'\n');
                exports.extend(std::fs::read(f).unwrap_or_default());
            }
        }
        for dir in nfs_exports(&exports) {
            let what = format!("NFS export {}", dir.display());
            found.push((dir, what));
        }
        let servers = servers();
        let mut ganesha = servers.ganesha_configs.clone();
        if ganesha.is_empty() && Path::new("/usr/bin/ganesha.nfsd").exists() {
            ganesha.push(PathBuf::from("/etc/ganesha/ganesha.conf"));
        }
        for conf in ganesha {
            let text = std::fs::read_to_string(&conf).unwrap_or_default();
            for dir in ganesha_exports(&text) {
                let what = format!("NFS-Ganesha export {}", dir.display());
                found.push((dir, what));
            }
        }
        let mut samba = servers.smbd_configs.clone();
        if samba.is_empty() && Path::new("/usr/sbin/smbd").exists() {
            samba.push(PathBuf::from("/etc/samba/smb.conf"));
        }
        for conf in samba {
            for (name, dir) in samba_shares(&conf, &regular_homes) {
                let what = format!("Samba share [{name}] at {}", dir.display());
                found.push((dir, what));
            }
        }
        // What users share with `net usershare add`.
        if let Ok(d) = std::fs::read_dir("/var/lib/samba/usershares") {
            for e in d.flatten() {
                let text = std::fs::read_to_string(e.path()).unwrap_or_default();
                if let Some(dir) = writable_usershare(&text) {
                    let what = format!(
                        "Samba user share [{}] at {}",
                        e.file_name().to_string_lossy(),
                        dir.display()
                    );
                    found.push((dir, what));
                }
            }
        }
        found.extend(servers.vm_dirs);
        let mut shares: Vec<Share> = found
            .into_iter()
            .filter(|(dir, _)| dir.is_absolute() && dir != Path::new("/"))
            .filter_map(|(dir, what)| {
                Some(Share {
                    dir: super::reach::canonical(&dir)?,
                    what,
                })
            })
            .collect();
        shares.sort_by(|a, b| a.dir.cmp(&b.dir).then(a.what.cmp(&b.what)));
        shares.dedup_by(|a, b| a.dir == b.dir);
        Shares(shares)
    }

    #[cfg(not(target_os = "linux"))]
    pub fn read() -> Shares {
        Shares::default()
    }

    /// The share `dir` (canonical here) lies in, the deepest if several.
    pub fn of(&self, dir: &Path) -> Option<&Share> {
        self.0
            .iter()
            .filter(|s| dir.starts_with(&s.dir))
            .max_by_key(|s| s.dir.components().count())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The directories of NFS export tables: the kernel's (`/proc/fs/nfsd/exports`,
/// `/var/lib/nfs/etab`) and `/etc/exports`, the path first on each line (a space in it written
/// `\040`, or the path in double quotes).
pub fn nfs_exports(table: &[u8]) -> Vec<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    table
        .split(|&b| b == b'\n')
        .filter_map(|l| {
            let start = l.iter().position(|b| !b.is_ascii_whitespace())?;
            let l = &l[start..];
            let path = match l.strip_prefix(b"\"") {
                Some(quoted) => &quoted[..quoted.iter().position(|&b| b == b'"')?],
                None => {
                    &l[..l
                        .iter()
                        .position(|b| b.is_ascii_whitespace())
                        .unwrap_or(l.len())]
                }
            };
            (path.first() == Some(&b'/')).then(|| {
                let raw = locksmith_sys::fs::mountinfo_unescape(path);
                PathBuf::from(std::ffi::OsString::from_vec(raw))
            })
        })
        .collect()
}

/// The `Path` of each `EXPORT` block of an NFS-Ganesha configuration.
pub fn ganesha_exports(text: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        for statement in line.split([';', '{', '}']) {
            let Some((key, value)) = statement.split_once('=') else {
                continue;
            };
            if key.trim().eq_ignore_ascii_case("path") {
                let value = value.trim().trim_matches('"');
                if !value.is_empty() {
                    out.push(PathBuf::from(value));
                }
            }
        }
    }
    out
}

/// The writable shares (name and directory) of the Samba configuration at `conf`, with the
/// files it includes. A share is read-only unless it says otherwise (Samba's default), and a
/// printer's share takes print jobs only: neither takes a lock from a client. `[homes]` with
/// no path shares every user's home (`homes()`), as does a path below `%H`. A path with
/// another variable (`/srv/%U`) shares the directory before it.
pub fn samba_shares(conf: &Path, homes: &dyn Fn() -> Vec<PathBuf>) -> Vec<(String, PathBuf)> {
    let mut sections: Vec<(String, Vec<(String, String)>)> = Vec::new();
    read_samba(conf, &mut sections, 0);
    let global = |key: &str| {
        sections
            .iter()
            .filter(|(name, _)| name.eq_ignore_ascii_case("global"))
            .flat_map(|(_, kv)| kv.iter())
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    let yes = |v: &str| matches!(v.to_ascii_lowercase().as_str(), "yes" | "true" | "1");
    let writable_default = global("read only").is_some_and(|v| !yes(&v))
        || global("writable").is_some_and(|v| yes(&v))
        || global("writeable").is_some_and(|v| yes(&v))
        || global("write ok").is_some_and(|v| yes(&v));
    let mut out = Vec::new();
    for (name, kv) in &sections {
        if name.eq_ignore_ascii_case("global") {
            continue;
        }
        let get = |key: &str| kv.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v);
        let printable = ["printable", "print ok"]
            .iter()
            .any(|k| get(k).is_some_and(|v| yes(v)));
        let writable = match (
            get("read only"),
            get("writable").or(get("writeable")).or(get("write ok")),
        ) {
            (Some(ro), _) => !yes(ro),
            (None, Some(w)) => yes(w),
            (None, None) => writable_default,
        } || get("write list").is_some_and(|v| !v.trim().is_empty());
        if printable || !writable {
            continue;
        }
        match get("path").or(get("directory")) {
            // The connecting user's home, or below it: every user's.
            Some(path) if path.starts_with("%H") => {
                out.extend(homes().into_iter().map(|h| (name.clone(), h)));
            }
            Some(path) => {
                let dir = match path.find('%') {
                    Some(at) => {
                        let before = &path[..at];
                        match before.rfind('/') {
                            Some(slash) => PathBuf::from(&before[..slash.max(1)]),
                            None => continue,
                        }
                    }
                    None => PathBuf::from(path),
                };
                out.push((name.clone(), dir));
            }
            None if name.eq_ignore_ascii_case("homes") => {
                out.extend(homes().into_iter().map(|h| (name.clone(), h)));
            }
            None => {}
        }
    }
    out
}

/// The directory of a Samba user share (a file of `/var/lib/samba/usershares`: `path=` and
/// `usershare_acl=`, a list of `SID:R` read, `SID:F` full, `SID:D` denied), when its ACL lets
/// someone write.
pub fn writable_usershare(text: &str) -> Option<PathBuf> {
    let get = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .map(str::trim)
    };
    let acl = get("usershare_acl").unwrap_or("");
    let writable = acl
        .split(',')
        .any(|ace| ace.trim().to_ascii_uppercase().ends_with(":F"));
    let path = get("path").filter(|p| !p.is_empty())?;
    writable.then(|| PathBuf::from(path))
}

/// Sections of a Samba configuration file and those it includes (`include = FILE`, to a depth
/// of four), keys lower-cased, in order.
fn read_samba(conf: &Path, sections: &mut Vec<(String, Vec<(String, String)>)>, depth: u8) {
    let Ok(text) = std::fs::read_to_string(conf) else {
        return;
    };
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            sections.push((name.trim().to_string(), Vec::new()));
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.split_whitespace().collect::<Vec<_>>().join(" ");
        let key = key.to_ascii_lowercase();
        let value = value.trim().to_string();
        if key == "include" && depth < 4 && !value.contains('%') {
            read_samba(Path::new(&value), sections, depth + 1);
            continue;
        }
        if sections.is_empty() {
            sections.push(("global".into(), Vec::new()));
        }
        if let Some((_, kv)) = sections.last_mut() {
            kv.push((key, value));
        }
    }
}

/// The home directories of the machine's people (uid 1000 and up, not `nobody`), from
/// `/etc/passwd`: who `[homes]` serves.
fn regular_homes() -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            let uid: u32 = f.get(2)?.parse().ok()?;
            let home = PathBuf::from(f.get(5)?);
            (uid >= 1000 && uid != 65534).then_some(home)
        })
        .collect()
}

/// What the running servers' command lines say.
#[derive(Debug, Default)]
struct Servers {
    smbd_configs: Vec<PathBuf>,
    ganesha_configs: Vec<PathBuf>,
    /// Directories given to virtual machines, and by what.
    vm_dirs: Vec<(PathBuf, String)>,
}

/// The command lines of `smbd`, `ganesha.nfsd`, `virtiofsd` and `qemu` processes (by their
/// names, one read of each process's `comm`).
#[cfg(target_os = "linux")]
fn servers() -> Servers {
    let mut out = Servers::default();
    for pid in locksmith_sys::host::pids() {
        let Some(comm) = locksmith_sys::host::comm(pid) else {
            continue;
        };
        if comm == "smbd"
            || comm == "ganesha.nfsd"
            || comm.starts_with("virtiofsd")
            || comm.starts_with("qemu")
        {
            server_args(&comm, &locksmith_sys::host::cmdline(pid), &mut out);
        }
    }
    out
}

#[cfg(not(target_os = "linux"))]
fn servers() -> Servers {
    Servers::default()
}

/// What one server's arguments say (`comm` its process name).
fn server_args(comm: &str, args: &[String], out: &mut Servers) {
    // `-o VALUE`, `-oVALUE`, `--opt VALUE`, `--opt=VALUE`.
    let values = |short: Option<&str>, long: Option<&str>| -> Vec<String> {
        let mut v = Vec::new();
        let mut it = args.iter().skip(1);
        while let Some(a) = it.next() {
            for flag in [short, long].into_iter().flatten() {
                if a == flag {
                    v.extend(it.next().cloned());
                    break;
                } else if let Some(rest) = a.strip_prefix(flag) {
                    if flag.starts_with("--") {
                        if let Some(val) = rest.strip_prefix('=') {
                            v.push(val.to_string());
                        }
                    } else if !rest.is_empty() {
                        v.push(rest.to_string());
                    }
                    break;
                }
            }
        }
        v
    };
    let path_options = |list: &str| -> Vec<PathBuf> {
        list.split(',')
            .filter_map(|o| {
                o.strip_prefix("path=")
                    .or_else(|| o.strip_prefix("source="))
            })
            .map(PathBuf::from)
            .collect()
    };
    if comm == "smbd" {
        out.smbd_configs.extend(
            values(Some("-s"), Some("--configfile"))
                .into_iter()
                .map(PathBuf::from),
        );
    } else if comm == "ganesha.nfsd" {
        out.ganesha_configs
            .extend(values(Some("-f"), None).into_iter().map(PathBuf::from));
    } else if comm.starts_with("virtiofsd") {
        let mut dirs: Vec<PathBuf> = values(None, Some("--shared-dir"))
            .into_iter()
            .map(PathBuf::from)
            .collect();
        for o in values(Some("-o"), None) {
            dirs.extend(path_options(&o));
        }
        for d in dirs {
            let what = format!("virtiofsd shared directory {}", d.display());
            out.vm_dirs.push((d, what));
        }
    } else {
        let mut dirs = Vec::new();
        for o in values(Some("-virtfs"), None)
            .into_iter()
            .chain(values(Some("-fsdev"), None))
        {
            dirs.extend(path_options(&o));
        }
        for d in dirs {
            let what = format!(
                "directory {} a QEMU virtual machine mounts (9p)",
                d.display()
            );
            out.vm_dirs.push((d, what));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_an_nfs_export_table() {
        let etab = b"/srv/nfs\t192.168.1.0/24(rw,sync,wdelay,hide,no_subtree_check)\n\
/srv/with\\040space\t*(ro)\n# Version 1.1\n";
        assert_eq!(
            nfs_exports(etab),
            vec![PathBuf::from("/srv/nfs"), PathBuf::from("/srv/with space")]
        );
    }

    #[test]
    fn reads_the_exports_file() {
        let exports = b"# /etc/exports\n/srv/homes  hostname1(rw,sync) hostname2(ro)\n\
  \"/srv/two words\" *(rw)\n\n/srv/cont \\\n   host(rw)\n";
        assert_eq!(
            nfs_exports(exports),
            vec![
                PathBuf::from("/srv/homes"),
                PathBuf::from("/srv/two words"),
                PathBuf::from("/srv/cont"),
            ]
        );
    }

    #[test]
    fn a_user_share_is_shared_when_someone_may_write() {
        let share = |acl: &str| {
            writable_usershare(&format!(
                "#VERSION 2\npath=/home/ann/pub\ncomment=\nusershare_acl={acl}\nguest_ok=n\n"
            ))
        };
        assert_eq!(share("S-1-1-0:F,"), Some(PathBuf::from("/home/ann/pub")));
        assert_eq!(share("S-1-1-0:R,"), None);
        assert_eq!(
            share("S-1-1-0:R,S-1-22-1-1000:f"),
            Some(PathBuf::from("/home/ann/pub"))
        );
    }

    #[test]
    fn reads_ganesha_exports() {
        let conf = "EXPORT {\n  Export_Id = 1;\n  Path = \"/srv/ganesha\";\n  Pseudo = /g;\n  \
                    FSAL { Name = VFS; }\n}\n# Path = /commented;\nEXPORT { path=/srv/two; }\n";
        assert_eq!(
            ganesha_exports(conf),
            vec![PathBuf::from("/srv/ganesha"), PathBuf::from("/srv/two")]
        );
    }

    #[test]
    fn only_writable_samba_shares_take_a_clients_lock() {
        let dir = tempfile::tempdir().unwrap();
        let extra = dir.path().join("extra.conf");
        std::fs::write(&extra, "[more]\n  path = /srv/more\n  writable = yes\n").unwrap();
        let conf = dir.path().join("smb.conf");
        std::fs::write(
            &conf,
            format!(
                "[global]\n   workgroup = WORKGROUP\n\
                 [homes]\n   read only = no\n\
                 [printers]\n   path = /var/tmp\n   printable = yes\n   read only = no\n\
                 [print$]\n   path = /var/lib/samba/printers\n\
                 [public]\n   path = /srv/public\n   read only = no\n\
                 [team]\n   Path = /srv/team/%U\n   write list = @team\n\
                 ; [old]\n;   path = /srv/old\n\
                 [ro]\n   path = /srv/ro\n   writeable = no\n\
                 [mine]\n   path = %H/shared\n   read only = no\n\
                 include = {}\n",
                extra.display()
            ),
        )
        .unwrap();
        let homes = || vec![PathBuf::from("/home/ann")];
        assert_eq!(
            samba_shares(&conf, &homes),
            vec![
                ("homes".to_string(), PathBuf::from("/home/ann")),
                ("public".into(), PathBuf::from("/srv/public")),
                ("team".into(), PathBuf::from("/srv/team")),
                ("mine".into(), PathBuf::from("/home/ann")),
                ("more".into(), PathBuf::from("/srv/more")),
            ]
        );
        // Writable by default in [global].
        std::fs::write(
            &conf,
            "[global]\nread only = no\n[data]\npath = /srv/data\n",
        )
        .unwrap();
        assert_eq!(
            samba_shares(&conf, &homes),
            vec![("data".to_string(), PathBuf::from("/srv/data"))]
        );
    }

    #[test]
    fn reads_the_directories_servers_are_given() {
        let args = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let mut out = Servers::default();
        server_args(
            "smbd",
            &args("/usr/sbin/smbd --foreground -s /tmp/t/smb.conf"),
            &mut out,
        );
        server_args(
            "smbd",
            &args("/usr/sbin/smbd --configfile=/etc/other.conf"),
            &mut out,
        );
        server_args(
            "ganesha.nfsd",
            &args("ganesha.nfsd -F -f /etc/g.conf"),
            &mut out,
        );
        server_args(
            "virtiofsd",
            &args("/usr/libexec/virtiofsd --socket-path=/run/v.sock --shared-dir /srv/vm1"),
            &mut out,
        );
        server_args(
            "virtiofsd",
            &args(
                "/usr/lib/qemu/virtiofsd --socket-path=/run/w.sock -o source=/srv/vm2,cache=auto",
            ),
            &mut out,
        );
        server_args(
            "qemu-system-x86",
            &args(
                "qemu-system-x86_64 -m 1G -virtfs local,path=/srv/vm3,mount_tag=h,security_model=none -fsdev local,id=f,path=/srv/vm4",
            ),
            &mut out,
        );
        assert_eq!(
            out.smbd_configs,
            vec![
                PathBuf::from("/tmp/t/smb.conf"),
                PathBuf::from("/etc/other.conf")
            ]
        );
        assert_eq!(out.ganesha_configs, vec![PathBuf::from("/etc/g.conf")]);
        let dirs: Vec<&Path> = out.vm_dirs.iter().map(|(d, _)| d.as_path()).collect();
        assert_eq!(
            dirs,
            ["/srv/vm1", "/srv/vm2", "/srv/vm3", "/srv/vm4"].map(Path::new)
        );
    }

    #[test]
    fn the_deepest_share_holding_a_directory_is_its_own() {
        let shares = Shares(vec![
            Share {
                dir: PathBuf::from("/srv"),
                what: "a".into(),
            },
            Share {
                dir: PathBuf::from("/srv/public"),
                what: "b".into(),
            },
        ]);
        assert_eq!(shares.of(Path::new("/srv/public/x")).unwrap().what, "b");
        assert_eq!(shares.of(Path::new("/srv/other")).unwrap().what, "a");
        assert_eq!(shares.of(Path::new("/srvx")), None);
    }
}
