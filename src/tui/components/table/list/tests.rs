//! The view kept up to date as rows come and go is the view built anew.

use crate::tui::testkit::*;

/// What can happen to the table between two frames.
#[derive(Debug, Clone)]
enum Step {
    /// A lock found (or found again, judged anew): path number, verdict, dialect, PID, age.
    Found(u8, Verdict, &'static str, Option<i64>, i64),
    /// A re-judge round found the lock gone.
    Gone(u8),
    /// Keys pressed: `s` and `S` sort, Tab filters by verdict, `/x` filters by text.
    Keys(&'static str),
    /// The clock advances.
    Tick(i64),
    /// A frame: the view is brought up to date.
    Frame,
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    let verdict = proptest::sample::select(Verdict::ALL.to_vec());
    let dialect = proptest::sample::select(vec!["pidfile", "git", "flock", "vim-swap"]);
    let pid = proptest::option::of(1i64..6);
    let found = (0u8..40, verdict, dialect, pid, 0i64..200_000)
        .prop_map(|(n, v, d, p, age)| Step::Found(n, v, d, p, age));
    let keys = proptest::sample::select(vec![
        "s",
        "S",
        "\t",
        "/1\n",
        "/2\n",
        "/pid\n",
        "/\x1b",
        "/\x7f\x7f\x7f\x7f\n",
    ]);
    prop_oneof![
        6 => found,
        2 => (0u8..40).prop_map(Step::Gone),
        2 => keys.prop_map(Step::Keys),
        1 => (0i64..120_000).prop_map(Step::Tick),
        3 => Just(Step::Frame),
    ]
}

/// The view as a rebuild from scratch makes it: the rows that pass the filters, sorted by the
/// sort column (inverted when descending), then by path.
fn view_built_anew(app: &App) -> Vec<String> {
    let needle = app.filter().to_lowercase();
    let mut rows: Vec<&crate::tui::rows::Row> = app
        .rows()
        .iter()
        .filter(|r| app.verdict_filter().is_none_or(|v| r.verdict() == v))
        .filter(|r| r.cells.search.contains(&needle))
        .collect();
    rows.sort_by(|a, b| {
        let primary = match app.sort() {
            Column::Verdict => a.verdict().cmp(&b.verdict()),
            Column::Dialect => a.cells.dialect.cmp(&b.cells.dialect),
            Column::Pid => a.cells.owner_pid.cmp(&b.cells.owner_pid),
            Column::Command => a.cells.command.cmp(&b.cells.command),
            Column::Host => a.cells.host.cmp(&b.cells.host),
            Column::Age => crate::tui::rows::age_ms(a, app.now_ms)
                .cmp(&crate::tui::rows::age_ms(b, app.now_ms)),
            Column::Path => a.finding.path.cmp(&b.finding.path),
            c => panic!("the UI does not sort by {c:?}"),
        };
        let primary = if app.descending() {
            primary.reverse()
        } else {
            primary
        };
        primary.then_with(|| a.finding.path.cmp(&b.finding.path))
    });
    rows.iter()
        .map(|r| r.finding.path.display().to_string())
        .collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

    /// Rows added, judged anew, removed, sorted and filtered in any order: after each frame the
    /// view (kept up to date a change at a time) is the one a rebuild makes, the selection is
    /// on a shown row, and the columns are as wide as their widest shown cell.
    #[test]
    fn the_view_kept_up_to_date_is_the_view_built_anew(steps in proptest::collection::vec(step(), 1..80)) {
        let mut app = App::new(opts(Theme::COLOR, false), NOW);
        let Effect::Scan { generation } = app.rescan() else { panic!("a scan starts") };
        let path = |n: u8| format!("/srv/d{}/lock{n}.pid", n % 3);
        for s in steps {
            match s {
                Step::Found(n, v, d, pid, age) => {
                    let mut f = finding(&path(n), d, v, pid);
                    f.modified_ms = Some(NOW - age);
                    found(&mut app, generation, f);
                }
                Step::Gone(n) => {
                    app.update(Msg::Rejudged(vec![(PathBuf::from(path(n)), Rejudge::Gone)]));
                }
                Step::Keys(k) => {
                    for c in k.chars() {
                        let code = match c {
                            '\t' => KeyCode::Tab,
                            '\n' => KeyCode::Enter,
                            '\x1b' => KeyCode::Esc,
                            '\x7f' => KeyCode::Backspace,
                            c => KeyCode::Char(c),
                        };
                        key(&mut app, code);
                    }
                }
                Step::Tick(ms) => {
                    let now = app.now_ms + ms;
                    app.update(Msg::Tick { now_ms: now });
                }
                Step::Frame => {
                    app.refresh();
                    proptest::prop_assert_eq!(order(&app), view_built_anew(&app));
                    if let Some(sel) = app.selected_row() {
                        proptest::prop_assert!(order(&app).contains(&sel.finding.path.display().to_string()));
                    }
                    let measured = crate::tui::components::table::content_widths(app.visible());
                    proptest::prop_assert_eq!(app.content_widths(), &measured);
                }
            }
        }
    }
}
