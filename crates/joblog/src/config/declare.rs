//! The `settings!` macro: one declaration per setting (name, type, default,
//! doc, environment variable, flag) becomes the typed `Settings` struct,
//! the table the layers and the docs read, and the resolution of each
//! field from the layers.

/// One setting as declared, for the command line, the layers and the docs.
#[derive(Debug, Clone, Copy)]
pub struct Declared {
    /// The key in `joblog.toml`; a dot is a table (`log.max_records` is
    /// `max_records` under `[log]`).
    pub key: &'static str,
    pub env: &'static str,
    /// The `joblog serve` flag, without `--`; `None` where a flag would be
    /// wrong (the token is the global `--token`).
    pub flag: Option<&'static str>,
    /// The type, as the docs name it.
    pub kind: &'static str,
    pub doc: &'static str,
    /// The default as a user would write it; empty when there is none.
    pub default: fn() -> String,
}

impl Declared {
    /// The doc on one line, for `--help` and the reference table.
    pub fn summary(&self) -> String {
        self.doc.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

/// Declares the settings. Each entry:
///
/// ```text
/// /// Doc, shown by --help and in docs/configuration.md.
/// field: Type = default_expr, key "toml.key", env "JOBLOG_…", flag Some("flag-name");
/// ```
macro_rules! settings {
    ($(
        $(#[doc = $doc:literal])+
        $field:ident : $ty:ty = $default:expr,
            key $key:literal, env $env:literal, flag $flag:expr;
    )+) => {
        /// Every server setting, resolved from the layers, typed.
        #[derive(Debug, Clone)]
        pub struct Settings {
            $($(#[doc = $doc])+ pub $field: $ty,)+
        }

        /// The declarations, in order.
        pub static DECLARED: &[$crate::config::declare::Declared] = &[$(
            $crate::config::declare::Declared {
                key: $key,
                env: $env,
                flag: $flag,
                kind: <$ty as $crate::config::value::SettingValue>::KIND,
                doc: concat!($($doc, "\n"),+),
                default: || {
                    let default: $ty = $default;
                    $crate::config::value::SettingValue::render(&default)
                },
            },
        )+];

        impl Settings {
            /// Each setting from the highest layer that gives it, else its
            /// default.
            pub fn resolve(
                layers: &$crate::config::layers::Layers,
            ) -> anyhow::Result<Settings> {
                Ok(Settings {$(
                    $field: match layers.get::<$ty>($key)? {
                        Some(v) => v,
                        None => $default,
                    },
                )+})
            }
        }
    };
}

pub(crate) use settings;
