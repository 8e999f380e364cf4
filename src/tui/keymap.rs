//! The key maps of the UI: tables of (keys, description, action) by context. The handler, the
//! key bar at the bottom of the screen and the `?` help screen are all read from them, so the
//! help can never drift from the real bindings. This module holds the bindings of the screen
//! itself (the table, the detail pane, the filter and find prompts, the global keys); each
//! pop-up brings its own [`Keys`] (see `popup`), and its context is [`Context::Popup`] of them.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// A pop-up's bindings, and the title of their section in the help.
#[derive(Debug, PartialEq, Eq)]
pub struct Keys {
    pub title: &'static str,
    pub bindings: &'static [Binding],
}

/// Where a binding applies: the UI is in exactly one context at a time (plus [`Context::Global`],
/// which applies everywhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// Everywhere.
    Global,
    /// The lock table.
    Table,
    /// The lock table with the detail pane open: its own keys first, then the table's.
    Detail,
    /// Typing a filter after `/`.
    Filter,
    /// Typing what to find after `f`.
    Find,
    /// A pop-up, with its own bindings.
    Popup(&'static Keys),
}

impl Context {
    pub fn title(self) -> &'static str {
        match self {
            Context::Global => "Everywhere",
            Context::Table => "Lock table",
            Context::Detail => "Detail pane (after Enter; the table's keys work too)",
            Context::Filter => "Filter (after /)",
            Context::Find => "Find (after f)",
            Context::Popup(k) => k.title,
        }
    }

    /// The bindings of this context itself, in map order.
    pub fn own(self) -> Box<dyn Iterator<Item = &'static Binding>> {
        match self {
            Context::Global => Box::new(GLOBAL.iter()),
            Context::Table => Box::new(TABLE.iter()),
            Context::Detail => Box::new(DETAIL.iter()),
            Context::Filter => Box::new(FILTER.iter()),
            Context::Find => Box::new(FIND.iter()),
            Context::Popup(k) => Box::new(k.bindings.iter()),
        }
    }

    /// Every binding that applies here, the first match winning: the context's own, then (for
    /// the detail pane) the table's, then the global ones.
    pub fn all(self) -> impl Iterator<Item = &'static Binding> {
        let inherited = match self {
            Context::Detail => Context::Table.own(),
            _ => Box::new(std::iter::empty()),
        };
        self.own().chain(inherited).chain(Context::Global.own())
    }
}

/// What a key does. The application's `update` is the only interpreter of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    /// Esc in the table: clear an active filter, then the marks; it never quits.
    Back,
    /// Down one line: the selection in the table, the text in a pop-up.
    Down,
    Up,
    Top,
    Bottom,
    PageDown,
    PageUp,
    /// Scroll the detail pane.
    DetailDown,
    DetailUp,
    /// Close the detail pane (Esc or q in it).
    CloseDetails,
    StartFilter,
    StartFind,
    FindNext,
    FindPrev,
    CycleSort,
    InvertSort,
    NextVerdictFilter,
    PrevVerdictFilter,
    Rescan,
    ToggleDetails,
    /// Mark or unmark the selected row (and move down).
    ToggleMark,
    Reclaim,
    /// Reclaim the marked locks, or every stale lock shown when none is marked.
    ReclaimAllStale,
    /// Put back what the UI reclaimed last (from its copies), after a confirmation.
    Undo,
    /// The journal view: every run's reclaims, any of which can be undone.
    Journal,
    CopyPath,
    /// Stop the processes that hold the selected lock (SIGTERM, then an offer of SIGKILL).
    Signal,
    /// Run the row's own action, as its dialect offers it (recover unsaved changes).
    Recover,
    /// A shell in the selected lock's directory.
    OpenShell,
    /// Take an error message and select the lock it is about.
    Why,
    Help,
    /// Prompt editing (filter, find): keep the text and go back to the table.
    TextDone,
    /// Prompt editing: drop the text and go back to the table.
    TextCancel,
    TextBackspace,
    /// Prompt editing: delete everything before the cursor (Ctrl-U).
    TextClearLine,
    /// Prompt editing: delete the word before the cursor (Ctrl-W).
    TextDeleteWord,
    /// Prompt editing: any printable character is typed.
    TextInput,
    /// A question's answers.
    Yes,
    No,
    /// Highlight the left button (Yes).
    ChooseLeft,
    /// Highlight the right button (No).
    ChooseRight,
    ToggleChoice,
    /// Take the highlighted button.
    Choose,
    /// Close a pop-up that asks nothing.
    Close,
    /// The stop dialog: the next signal to send, or the previous one.
    NextSignal,
    PrevSignal,
}

/// One key: a key code and the modifiers that must be held. For characters, Shift is implied by
/// the character itself and ignored when matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

impl Key {
    pub const fn plain(code: KeyCode) -> Key {
        Key {
            code,
            mods: KeyModifiers::NONE,
        }
    }

    pub const fn ch(c: char) -> Key {
        Key::plain(KeyCode::Char(c))
    }

    pub const fn ctrl(c: char) -> Key {
        Key {
            code: KeyCode::Char(c),
            mods: KeyModifiers::CONTROL,
        }
    }

    /// Whether a key event is this key.
    pub fn matches(&self, ev: &KeyEvent) -> bool {
        let relevant = KeyModifiers::CONTROL | KeyModifiers::ALT;
        match (self.code, ev.code) {
            (KeyCode::Char(a), KeyCode::Char(b)) => {
                a == b && (ev.modifiers & relevant) == (self.mods & relevant)
            }
            // Shift-Tab arrives as BackTab (with or without SHIFT reported).
            (KeyCode::BackTab, KeyCode::BackTab) => true,
            (a, b) => a == b && ev.modifiers == self.mods,
        }
    }

    /// The key's name as the help, the key bar and messages show it: `j`, `↓`, `Ctrl-F`, `PgDn`.
    pub fn name(&self) -> String {
        let base = match self.code {
            KeyCode::Char(' ') => "Space".to_string(),
            KeyCode::Char(c) if self.mods.contains(KeyModifiers::CONTROL) => {
                return format!("Ctrl-{}", c.to_ascii_uppercase());
            }
            KeyCode::Char(c) => c.to_string(),
            KeyCode::Down => "↓".into(),
            KeyCode::Up => "↑".into(),
            KeyCode::Left => "←".into(),
            KeyCode::Right => "→".into(),
            KeyCode::Home => "Home".into(),
            KeyCode::End => "End".into(),
            KeyCode::PageDown => "PgDn".into(),
            KeyCode::PageUp => "PgUp".into(),
            KeyCode::Enter => "Enter".into(),
            KeyCode::Esc => "Esc".into(),
            KeyCode::Tab => "Tab".into(),
            KeyCode::BackTab => "S-Tab".into(),
            KeyCode::Backspace => "Backspace".into(),
            other => format!("{other:?}"),
        };
        if self.mods.contains(KeyModifiers::SHIFT) {
            format!("S-{base}")
        } else {
            base
        }
    }
}

/// Whether and how a binding shows in the key bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bar {
    /// Only in the help.
    No,
    /// In the key bar, always with the same words. When the bar is too narrow, the bindings
    /// of the highest rank go first (1 stays longest).
    Yes { rank: u8 },
}

/// A binding: any of `keys` triggers `action` (in the context whose list holds it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding {
    /// The keys, the one shown in the key bar and in messages first.
    pub keys: &'static [Key],
    /// What the key does, in a few words (key bar) ...
    pub short: &'static str,
    /// ... and in a sentence (help screen).
    pub long: &'static str,
    pub action: Action,
    pub bar: Bar,
}

impl Binding {
    /// The names of the binding's keys; a capital letter bound with its small one is named
    /// once (`y` for `y` and `Y`).
    pub fn names(&self) -> Vec<String> {
        self.keys
            .iter()
            .filter(|k| match k.code {
                KeyCode::Char(c) if c.is_ascii_uppercase() && k.mods.is_empty() => {
                    !self.keys.contains(&Key::ch(c.to_ascii_lowercase()))
                }
                _ => true,
            })
            .map(Key::name)
            .collect()
    }

    /// Every key of the binding, as the help screen lists them: `PgDn/Ctrl-F`.
    pub fn label(&self) -> String {
        if self.keys.is_empty() {
            return "other keys".into();
        }
        self.names().join("/")
    }

    /// The binding's first key, as messages show it.
    pub fn key_name(&self) -> String {
        self.keys.first().map(Key::name).unwrap_or_default()
    }

    /// The binding's first two keys, as the key bar shows them (`n/Esc`).
    pub fn bar_label(&self) -> String {
        let names = self.names();
        names[..names.len().min(2)].join("/")
    }
}

/// A binding.
pub const fn bind(
    keys: &'static [Key],
    short: &'static str,
    long: &'static str,
    action: Action,
    bar: Bar,
) -> Binding {
    Binding {
        keys,
        short,
        long,
        action,
        bar,
    }
}

/// In the key bar with this rank.
pub const fn bar(rank: u8) -> Bar {
    Bar::Yes { rank }
}

use Action as A;
use Context as C;

pub const DOWN: &[Key] = &[Key::ch('j'), Key::plain(KeyCode::Down)];
pub const UP: &[Key] = &[Key::ch('k'), Key::plain(KeyCode::Up)];
pub const TOP: &[Key] = &[Key::ch('g'), Key::plain(KeyCode::Home)];
pub const BOTTOM: &[Key] = &[Key::ch('G'), Key::plain(KeyCode::End)];
pub const PAGE_DOWN: &[Key] = &[Key::plain(KeyCode::PageDown), Key::ctrl('f')];
pub const PAGE_UP: &[Key] = &[Key::plain(KeyCode::PageUp), Key::ctrl('b')];
const ENTER: &[Key] = &[Key::plain(KeyCode::Enter)];
const ESC: &[Key] = &[Key::plain(KeyCode::Esc)];
const BACKSPACE: &[Key] = &[Key::plain(KeyCode::Backspace)];
const CTRL_U: &[Key] = &[Key::ctrl('u')];
const CTRL_W: &[Key] = &[Key::ctrl('w')];

/// The bindings of a text prompt (the filter, find): `done` and `cancel` say what Enter and
/// Esc do with the text.
macro_rules! prompt {
    ($done:expr, $cancel:expr, $input:expr) => {
        [
            bind(ENTER, "keep", $done, A::TextDone, bar(1)),
            bind(ESC, "cancel", $cancel, A::TextCancel, bar(1)),
            bind(
                BACKSPACE,
                "delete",
                "Delete the last character",
                A::TextBackspace,
                bar(2),
            ),
            bind(
                CTRL_U,
                "clear",
                "Delete everything typed",
                A::TextClearLine,
                bar(3),
            ),
            bind(
                CTRL_W,
                "delete word",
                "Delete the last word",
                A::TextDeleteWord,
                bar(3),
            ),
            bind(&[], "type", $input, A::TextInput, Bar::No),
        ]
    };
}

static FILTER: [Binding; 6] = prompt!(
    "Keep the filter and go back to the list",
    "Clear the filter and go back to the list",
    "Any other character narrows the list as you type (the selection stays if it matches)"
);
static FIND: [Binding; 6] = prompt!(
    "Stay on the lock found (n and N find the next and previous)",
    "Go back to where the selection was",
    "Any other character finds the next lock that matches, as you type"
);

/// The keys that work everywhere.
static GLOBAL: &[Binding] = &[bind(
    &[Key::ctrl('c')],
    "quit",
    "Quit at once",
    A::Quit,
    Bar::No,
)];

/// The lock table's keys, in the order the help lists them.
static TABLE: &[Binding] = &[
    bind(DOWN, "down", "Select the next lock", A::Down, Bar::No),
    bind(UP, "up", "Select the previous lock", A::Up, Bar::No),
    bind(TOP, "top", "Select the first lock", A::Top, Bar::No),
    bind(BOTTOM, "bottom", "Select the last lock", A::Bottom, Bar::No),
    bind(
        PAGE_DOWN,
        "page down",
        "Move the selection one page down",
        A::PageDown,
        Bar::No,
    ),
    bind(
        PAGE_UP,
        "page up",
        "Move the selection one page up",
        A::PageUp,
        Bar::No,
    ),
    bind(
        ENTER,
        "details",
        "Show or hide the evidence of the selected lock",
        A::ToggleDetails,
        bar(5),
    ),
    bind(
        &[Key::ch(' ')],
        "mark",
        "Mark or unmark the selected lock (and move down); D reclaims the marked",
        A::ToggleMark,
        bar(6),
    ),
    bind(
        &[Key::ch('d')],
        "reclaim",
        "Reclaim the selected lock after confirmation (unproven: a warning first)",
        A::Reclaim,
        bar(2),
    ),
    bind(
        &[Key::ch('D')],
        "all stale",
        "Reclaim the marked locks, or every stale lock shown when none is marked, after confirmation",
        A::ReclaimAllStale,
        bar(3),
    ),
    bind(
        &[Key::ch('x')],
        "stop",
        "Signal the processes that hold the selected lock, and what they started and wait for: SIGTERM, SIGINT, SIGHUP, SIGKILL, or SIGCONT for a stopped one, after confirmation",
        A::Signal,
        bar(2),
    ),
    bind(
        &[Key::ch('e')],
        "recover",
        locksmith::dialect::ACTION_KEY_HELP,
        A::Recover,
        Bar::No,
    ),
    bind(
        &[Key::ch('o')],
        "shell",
        "Open a shell ($SHELL) in the selected lock's directory; exit it to come back",
        A::OpenShell,
        Bar::No,
    ),
    bind(
        &[Key::ch('w')],
        "why",
        "Paste a program's error message (or paste it anywhere in the table): select the lock it is about",
        A::Why,
        Bar::No,
    ),
    bind(
        &[Key::ch('y')],
        "copy path",
        "Copy the path of the selected lock to the clipboard (OSC 52)",
        A::CopyPath,
        Bar::No,
    ),
    bind(
        &[Key::ch('/')],
        "filter",
        "Filter the list by text (path, dialect, command, host, pid); n and N then find it again once the filter is cleared",
        A::StartFilter,
        bar(3),
    ),
    bind(
        &[Key::ch('f')],
        "find",
        "Find a lock by text without hiding the others",
        A::StartFind,
        Bar::No,
    ),
    bind(
        &[Key::ch('n')],
        "next match",
        "Select the next lock that matches what / or f looked for last",
        A::FindNext,
        bar(4),
    ),
    bind(
        &[Key::ch('N')],
        "previous match",
        "Select the previous lock that matches what / or f looked for last",
        A::FindPrev,
        Bar::No,
    ),
    bind(
        &[Key::plain(KeyCode::Tab)],
        "verdict",
        "Show only one verdict (cycles stale, live, foreign, unknown, free, all)",
        A::NextVerdictFilter,
        bar(6),
    ),
    bind(
        &[Key::plain(KeyCode::BackTab)],
        "verdict back",
        "Cycle the verdict filter backwards",
        A::PrevVerdictFilter,
        Bar::No,
    ),
    bind(
        &[Key::ch('s')],
        "sort",
        "Sort by the next column, ascending (or click a column's title)",
        A::CycleSort,
        bar(3),
    ),
    bind(
        &[Key::ch('S')],
        "invert sort",
        "Invert the sort order",
        A::InvertSort,
        Bar::No,
    ),
    bind(
        &[Key::ch('r')],
        "rescan",
        "Scan again from scratch (new locks also appear by themselves)",
        A::Rescan,
        bar(4),
    ),
    bind(
        &[Key::ch('u')],
        "undo",
        "Undo the last reclaim made in the UI (a D as one step; also one of an earlier session), after a preview and a yes",
        A::Undo,
        bar(2),
    ),
    bind(
        &[Key::ch('U')],
        "journal",
        "The journal view: every run's reclaims by run, to undo any of them (after a preview and a yes)",
        A::Journal,
        bar(4),
    ),
    bind(&[Key::ch('?')], "help", "Show this help", A::Help, bar(1)),
    bind(&[Key::ch('q')], "quit", "Quit", A::Quit, bar(1)),
    bind(
        ESC,
        "back",
        "Back out: clear the filter if one is set, else the marks; never quits (q does)",
        A::Back,
        Bar::No,
    ),
];

/// The detail pane's own keys (the table's work there too).
static DETAIL: &[Binding] = &[
    bind(
        &[Key::ch('q'), Key::plain(KeyCode::Esc)],
        "close",
        "Close the detail pane",
        A::CloseDetails,
        bar(1),
    ),
    bind(
        &[Key::ch('J')],
        "scroll",
        "Scroll the detail pane down (the mouse wheel over it too)",
        A::DetailDown,
        bar(4),
    ),
    bind(
        &[Key::ch('K')],
        "scroll up",
        "Scroll the detail pane up",
        A::DetailUp,
        Bar::No,
    ),
];

/// The action a key triggers in a context. In a prompt (and a pop-up that takes text) a
/// printable character with no binding is [`Action::TextInput`].
pub fn lookup(context: Context, ev: &KeyEvent) -> Option<Action> {
    let found = context
        .all()
        .find(|b| b.keys.iter().any(|k| k.matches(ev)))
        .map(|b| b.action);
    let takes_text = match context {
        Context::Filter | Context::Find => true,
        Context::Popup(k) => k.bindings.iter().any(|b| b.action == Action::TextInput),
        _ => false,
    };
    if found.is_none()
        && takes_text
        && let KeyCode::Char(c) = ev.code
        && !ev
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
        && !c.is_control()
    {
        return Some(Action::TextInput);
    }
    found
}

/// The binding of an action in a context (its own or inherited).
pub fn binding(context: Context, action: Action) -> Option<&'static Binding> {
    context.all().find(|b| b.action == action)
}

/// The name of the key that triggers `action` in `context`, for messages ("`d` reclaims it"):
/// read from the map, so a message can never name a key that does something else.
pub fn key(context: Context, action: Action) -> String {
    binding(context, action).map_or_else(|| "?".into(), Binding::key_name)
}

/// Every key of `action` in `context`, as the help lists them (`j/↓`).
pub fn keys(context: Context, action: Action) -> String {
    binding(context, action).map_or_else(|| "?".into(), Binding::label)
}

/// One entry of the key bar: the key's name, its label, and its rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BarItem {
    pub key: String,
    pub label: String,
    pub rank: u8,
}

/// The entries of a key bar `width` columns wide, in order: every entry if they fit, else
/// without the entries of the highest rank, one at a time (the last of that rank first),
/// until they fit (rank 1 always stays). An entry's words never change with the width. Each
/// entry takes its key, a space, its label and two spaces (the last two may fall off the
/// edge).
pub fn fit_bar(items: Vec<BarItem>, width: usize) -> Vec<(String, String)> {
    let measure = |items: &[BarItem]| -> usize {
        items
            .iter()
            .map(|i| super::text::width(&i.key) + super::text::width(&i.label) + 3)
            .sum::<usize>()
            .saturating_sub(2)
    };
    let mut items = items;
    loop {
        if measure(&items) <= width {
            break;
        }
        let Some(worst) = items.iter().map(|i| i.rank).filter(|&r| r > 1).max() else {
            break;
        };
        // Within the rank, the last entry goes first.
        let i = items.iter().rposition(|i| i.rank == worst).expect("found");
        items.remove(i);
    }
    items.into_iter().map(|i| (i.key, i.label)).collect()
}

/// The key map as the book's reference shows it (`docs/src/reference/keys.md`): one Markdown
/// table, by context, every key of each binding (a test keeps the book's copy equal to this).
#[cfg(test)]
pub fn markdown(popups: &[&'static Keys]) -> String {
    let mut out = String::from("| where | keys | action |\n|---|---|---|\n");
    for (title, b) in listing(popups) {
        let keys = if b.keys.is_empty() {
            "other keys".to_string()
        } else {
            let names: Vec<String> = b.names().iter().map(|k| format!("`{k}`")).collect();
            names.join(" ")
        };
        out.push_str(&format!("| {title} | {keys} | {} |\n", b.long));
    }
    out
}

/// Every binding with the title of its section, in the order of the help: the screen's
/// contexts, the pop-ups, then the global keys.
pub fn listing(popups: &[&'static Keys]) -> Vec<(&'static str, &'static Binding)> {
    let mut contexts = vec![C::Table, C::Detail, C::Filter, C::Find];
    contexts.extend(popups.iter().map(|&k| C::Popup(k)));
    contexts.push(C::Global);
    contexts
        .into_iter()
        .flat_map(|c| c.own().map(move |b| (c.title(), b)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn contexts() -> Vec<Context> {
        let mut all = vec![C::Table, C::Detail, C::Filter, C::Find];
        all.extend(super::super::popup::ALL.iter().map(|&k| C::Popup(k)));
        all
    }

    #[test]
    fn every_key_of_a_context_means_one_action() {
        for ctx in contexts() {
            // The detail pane's own keys take precedence over the table's: only its own and
            // the global ones must be distinct.
            let in_ctx: Vec<&Binding> = ctx.own().chain(C::Global.own()).collect();
            for (i, a) in in_ctx.iter().enumerate() {
                for b in &in_ctx[i + 1..] {
                    for k in a.keys {
                        assert!(
                            !b.keys.contains(k),
                            "{k:?} bound twice in {}: {} and {}",
                            ctx.title(),
                            a.label(),
                            b.label()
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn lookup_reads_the_map() {
        assert_eq!(lookup(C::Table, &key(KeyCode::Char('j'))), Some(A::Down));
        assert_eq!(lookup(C::Table, &key(KeyCode::Down)), Some(A::Down));
        assert_eq!(lookup(C::Table, &key(KeyCode::Char('X'))), None);
        // Shift reported or not, 'S' is the capital letter.
        let shifted = KeyEvent::new(KeyCode::Char('S'), KeyModifiers::SHIFT);
        assert_eq!(lookup(C::Table, &shifted), Some(A::InvertSort));
        // Ctrl-C quits everywhere, and is not the letter c.
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        for ctx in contexts() {
            assert_eq!(lookup(ctx, &ctrl_c), Some(A::Quit));
        }
        assert_eq!(lookup(C::Table, &key(KeyCode::Char('c'))), None);
        // In a prompt, letters are text, even those bound in the table; Ctrl-U and Ctrl-W edit.
        for ctx in [C::Filter, C::Find] {
            assert_eq!(lookup(ctx, &key(KeyCode::Char('q'))), Some(A::TextInput));
            assert_eq!(lookup(ctx, &key(KeyCode::Esc)), Some(A::TextCancel));
            let ctrl = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL);
            assert_eq!(lookup(ctx, &ctrl('u')), Some(A::TextClearLine));
            assert_eq!(lookup(ctx, &ctrl('w')), Some(A::TextDeleteWord));
            assert_eq!(lookup(ctx, &ctrl('x')), None);
        }
        // The detail pane: q and Esc close it; the table's keys work there too.
        assert_eq!(
            lookup(C::Detail, &key(KeyCode::Char('q'))),
            Some(A::CloseDetails)
        );
        assert_eq!(lookup(C::Detail, &key(KeyCode::Esc)), Some(A::CloseDetails));
        assert_eq!(
            lookup(C::Detail, &key(KeyCode::Char('d'))),
            Some(A::Reclaim)
        );
        assert_eq!(lookup(C::Table, &key(KeyCode::Char('q'))), Some(A::Quit));
        assert_eq!(lookup(C::Table, &key(KeyCode::Char('J'))), None);
    }

    #[test]
    fn labels_are_made_from_the_keys() {
        let label = |ctx, action| keys(ctx, action);
        assert_eq!(label(C::Table, A::Down), "j/↓");
        assert_eq!(label(C::Table, A::PageDown), "PgDn/Ctrl-F");
        assert_eq!(label(C::Table, A::PageUp), "PgUp/Ctrl-B");
        assert_eq!(label(C::Table, A::Top), "g/Home");
        assert_eq!(label(C::Table, A::Bottom), "G/End");
        assert_eq!(label(C::Table, A::PrevVerdictFilter), "S-Tab");
        assert_eq!(label(C::Table, A::ToggleMark), "Space");
        assert_eq!(label(C::Detail, A::CloseDetails), "q/Esc");
        assert_eq!(
            label(C::Detail, A::Reclaim),
            "d",
            "inherited from the table"
        );
        assert_eq!(label(C::Filter, A::TextClearLine), "Ctrl-U");
        assert_eq!(super::key(C::Global, A::Quit), "Ctrl-C");
        // Every bound key of every binding triggers it, in every context that has it.
        for ctx in contexts() {
            for b in ctx.own() {
                for k in b.keys {
                    let ev = KeyEvent::new(k.code, k.mods);
                    assert_eq!(lookup(ctx, &ev), Some(b.action), "{}", k.name());
                }
            }
        }
    }

    fn item(key: &str, label: &str, rank: u8) -> BarItem {
        BarItem {
            key: key.into(),
            label: label.into(),
            rank,
        }
    }

    #[test]
    fn a_narrow_bar_drops_the_highest_ranks_and_keeps_its_words() {
        let items = vec![
            item("Enter", "details", 5),
            item("s", "sort", 3),
            item("u", "undo", 3),
            item("/", "filter", 4),
            item("q", "quit", 1),
        ];
        let keys = |v: Vec<(String, String)>| -> String {
            v.iter()
                .map(|(k, l)| format!("{k} {l}"))
                .collect::<Vec<_>>()
                .join("  ")
        };
        let all = "Enter details  s sort  u undo  / filter  q quit";
        assert_eq!(keys(fit_bar(items.clone(), 80)), all);
        assert_eq!(keys(fit_bar(items.clone(), all.len())), all);
        assert_eq!(
            keys(fit_bar(items.clone(), all.len() - 1)),
            "s sort  u undo  / filter  q quit"
        );
        assert_eq!(keys(fit_bar(items.clone(), 30)), "s sort  u undo  q quit");
        assert_eq!(keys(fit_bar(items.clone(), 14)), "s sort  q quit");
        assert_eq!(keys(fit_bar(items.clone(), 3)), "q quit", "rank 1 stays");
        // Whatever the width, an entry that is shown has the same words.
        for w in 0..80 {
            for (k, l) in fit_bar(items.clone(), w) {
                let same = items.iter().find(|i| i.key == k).unwrap();
                assert_eq!(l, same.label, "at {w} columns");
            }
        }
    }
}
