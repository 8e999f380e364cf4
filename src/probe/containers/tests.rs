use super::*;

const ID: &str = "be9b0aff69eb06a6cca64f6a95455811301c56470b4da31c8a0b9750770acc1a";

fn id(runtime: &str, id: &str, name: Option<&str>) -> Option<ContainerId> {
    Some(ContainerId {
        runtime: runtime.into(),
        id: id.into(),
        name: name.map(Into::into),
    })
}

#[test]
fn names_runtimes_from_cgroup_paths() {
    let cases = [
            (format!("0::/libpod_parent/libpod-{ID}"), id("podman", ID, None)),
            (
                format!("0::/machine.slice/libpod-{ID}.scope/container"),
                id("podman", ID, None),
            ),
            (format!("0::/system.slice/docker-{ID}.scope"), id("docker", ID, None)),
            (format!("12:memory:/docker/{ID}\n0::/"), id("docker", ID, None)),
            (
                format!(
                    "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b_3c.slice/cri-containerd-{ID}.scope"
                ),
                id("kubernetes", ID, None),
            ),
            (
                format!("0::/kubepods/besteffort/pod1a2b-3c/{ID}"),
                id("kubernetes", ID, None),
            ),
            (
                "0::/machine.slice/machine-web\\x2d1.scope/payload".to_string(),
                id("nspawn", "web-1", Some("web-1")),
            ),
            ("0::/lxc.payload.db1".to_string(), id("lxc", "db1", Some("db1"))),
            (
                "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-flatpak-org.gnome.Builder-1234.scope"
                    .to_string(),
                id("flatpak", "org.gnome.Builder", Some("org.gnome.Builder")),
            ),
            ("0::/user.slice/user-1000.slice/session-2.scope".to_string(), None),
            ("0::/".to_string(), None),
            // Not a container id: 32 hex digits under a supervisor's cgroup.
            (
                "4:memory:/process_api/74998c07ebde8aa3471fc67ae17d1340".to_string(),
                None,
            ),
        ];
    for (cg, want) in cases {
        assert_eq!(from_cgroup(&cg), want, "{cg}");
    }
    assert_eq!(
        kubernetes_pod_uid("0::/kubepods.slice/kubepods-burstable-pod1a2b_3c.slice/x"),
        Some("1a2b-3c".into())
    );
}

#[test]
fn describes_containers() {
    let c = id("podman", ID, Some("web-1")).unwrap();
    assert_eq!(c.describe(), "container web-1 (podman be9b0aff69eb…)");
    assert_eq!(c.label(), "web-1");
    let anon = id("unknown", "pid:[4026532252]", None).unwrap();
    assert_eq!(anon.describe(), "PID namespace pid:[4026532252]");
    assert_eq!(anon.label(), "pid:[4026532252]");
}

#[test]
fn maps_paths_through_mounts() {
    let mi = b"73 47 254:0 /srv/storage/vfs/dir/a097 / rw - ext4 /dev/vda rw\n\
74 73 254:0 /srv/apps /app rw - ext4 /dev/vda rw\n\
75 73 0:42 / /proc rw - proc proc rw\n\
76 73 254:0 /srv/my\\040dir /data rw - ext4 /dev/vda rw\n";
    let mounts = crate::probe::fs::parse_mountinfo(mi);
    assert_eq!(mounts.len(), 4);
    assert_eq!(mounts[3].root, Path::new("/srv/my dir"));
    let dev = rustix::fs::makedev(254, 0);
    assert_eq!(
        inside(&mounts, dev, Path::new("/srv/apps/one/tmp/pids/server.pid")),
        Some(PathBuf::from("/app/one/tmp/pids/server.pid"))
    );
    assert_eq!(
        inside(
            &mounts,
            dev,
            Path::new("/srv/storage/vfs/dir/a097/tmp/x.pid")
        ),
        Some(PathBuf::from("/tmp/x.pid"))
    );
    assert_eq!(inside(&mounts, dev, Path::new("/home/x.pid")), None);
    assert_eq!(inside(&mounts, dev + 1, Path::new("/srv/apps/x")), None);
    assert_eq!(
        fs_relative(&mounts, Path::new("/app/one/x"), dev),
        Some((dev, PathBuf::from("/srv/apps/one/x")))
    );
    // Not placed by a mount of another device, unless that is btrfs (subvolumes).
    assert_eq!(fs_relative(&mounts, Path::new("/app/one/x"), dev + 7), None);
    let btrfs =
        crate::probe::fs::parse_mountinfo(b"80 1 0:40 /vol /data rw - btrfs /dev/loop0 rw\n");
    assert_eq!(
        fs_relative(&btrfs, Path::new("/data/sub/x.pid"), 12345),
        Some((rustix::fs::makedev(0, 40), PathBuf::from("/vol/sub/x.pid")))
    );
    let host = crate::probe::fs::parse_mountinfo(b"1 0 254:0 / / rw - ext4 /dev/vda rw\n");
    let ns = Namespace {
        inode: 1,
        init: 1,
        pids: HashMap::new(),
        mounts,
        views: Vec::new(),
        mounts_cut: false,
        root: None,
        proven: true,
        container: id("unknown", "x", None).unwrap(),
        hostname: HostName::default(),
        maker: None,
        within: None,
    };
    assert!(
        ns.binds(&host)
            .contains(&(PathBuf::from("/srv/apps"), PathBuf::from("/app")))
    );
    assert_eq!(
        proc_root_path(Path::new("/proc/42/root/tmp/a.pid")),
        Some((42, PathBuf::from("/tmp/a.pid")))
    );
    assert_eq!(proc_root_path(Path::new("/proc/42/cwd/a")), None);
    assert_eq!(proc_root_path(Path::new("/tmp/a")), None);
}

#[test]
fn a_file_of_an_overlay_layer_is_placed_within_the_overlay() {
    let layers = RelativeLayers::default();
    let canonical = CanonicalDirs::default();
    let holds =
        |dir: &str, file: &'static str| layers.holds(Path::new(dir), Path::new(file), &canonical);
    let file = "/var/lib/docker/overlay2/abc/diff/run/x.pid";
    let upper = "/var/lib/docker/overlay2/abc/diff";
    assert_eq!(holds(upper, file), Some(Path::new("run/x.pid")));
    assert_eq!(
        holds(upper, "/var/lib/docker/overlay2/abcd/diff/x.pid"),
        None
    );
    // Named relative to the runtime's storage: wherever those names end a directory.
    assert_eq!(holds("abc/diff", file), Some(Path::new("run/x.pid")));
    assert_eq!(holds("ab/diff", file), None);
    // The layer's directory itself is no file of it.
    assert_eq!(holds("abc/diff", "/s/abc/diff"), None);
}

#[test]
fn a_layer_named_by_a_short_link_is_found_from_the_storage_above_its_files() {
    let storage = tempfile::tempdir().unwrap();
    let home = std::fs::canonicalize(storage.path()).unwrap();
    for dir in ["abc/diff/etc", "def/diff/etc", "l"] {
        std::fs::create_dir_all(home.join(dir)).unwrap();
    }
    std::os::unix::fs::symlink("../abc/diff", home.join("l/SHORTA")).unwrap();
    std::os::unix::fs::symlink("../def/diff", home.join("l/SHORTD")).unwrap();
    let file = home.join("abc/diff/etc/baked.pid");
    let layers = RelativeLayers::default();
    let canonical = CanonicalDirs::default();
    assert_eq!(
        layers.holds(Path::new("l/SHORTA"), &file, &canonical),
        Some(Path::new("etc/baked.pid"))
    );
    // Another layer's link, a link that is not there, a name of no link.
    assert_eq!(layers.holds(Path::new("l/SHORTD"), &file, &canonical), None);
    assert_eq!(layers.holds(Path::new("l/NONE"), &file, &canonical), None);
    assert_eq!(layers.holds(Path::new("m/SHORTA"), &file, &canonical), None);
    // The link's target is no file of the layer it names.
    assert_eq!(
        layers.holds(Path::new("l/SHORTA"), &home.join("abc/diff"), &canonical),
        None
    );
}

#[test]
fn reads_cgroup_mounts_and_checks_their_owners() {
    let mi = b"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n\
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
    let mounts = cgroup_mounts(mi);
    assert_eq!(mounts.len(), 3);
    assert_eq!(mounts[2].options, None);
    assert_eq!(mounts[2].point, Path::new("/sys/fs/cgroup/unified"));
    assert!(
        mounts[1]
            .options
            .as_ref()
            .unwrap()
            .contains(&"name=systemd".into())
    );

    // A hierarchy mounted from a temp dir: who owns its cgroups decides.
    let t = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(t.path().join("libpod_parent/libpod-x")).unwrap();
    let here = vec![CgroupMount {
        options: None,
        root: PathBuf::from("/"),
        point: t.path().to_path_buf(),
    }];
    let root = rustix::process::geteuid().is_root();
    assert_eq!(root_owned_cgroup("0::/libpod_parent/libpod-x", &here), root);
    assert!(!root_owned_cgroup("0::/libpod_parent/missing", &here));
    assert!(!root_owned_cgroup(
        "4:memory:/libpod_parent/libpod-x",
        &here
    ));
    assert!(!root_owned_cgroup(
        "0::/libpod_parent/../libpod_parent",
        &here
    ));
    // Writable by others without the sticky bit: no file there is root's word.
    use std::os::unix::fs::PermissionsExt;
    let open = t.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::write(open.join("state.json"), "{}").unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert!(
        RootOwned::default()
            .file(&open.join("state.json"))
            .is_none()
    );
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut owned = RootOwned::default();
    assert_eq!(owned.file(&open.join("state.json")).is_some(), root);
    // Through a symlink to it, and again (its directories asked once).
    std::os::unix::fs::symlink(open.join("state.json"), t.path().join("link.json")).unwrap();
    assert_eq!(owned.file(&t.path().join("link.json")).is_some(), root);
    assert_eq!(owned.file(&open.join("state.json")).is_some(), root);
}

#[test]
fn below_is_strip_prefix_for_normalized_paths() {
    for (path, base) in [
        ("/a/b/c", "/a/b"),
        ("/a/b", "/a/b"),
        ("/a/bc", "/a/b"),
        ("/a/b/c", "/"),
        ("/", "/"),
        ("/a", "/a/b"),
        ("/a/b/", "/a/b"),
        ("/ab", "/a"),
    ] {
        let (path, base) = (Path::new(path), Path::new(base));
        assert_eq!(
            below(path, base),
            path.strip_prefix(base).ok(),
            "{path:?} {base:?}"
        );
    }
}

#[test]
fn reads_nspid() {
    assert_eq!(
        nspid("Name:\tsleep\nNSpid:\t25092\t1\nNSpgid:\t1\n"),
        Some(vec![25092, 1])
    );
    assert_eq!(nspid("Name:\tx\n"), None);
}
