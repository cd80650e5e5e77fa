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
    /// The values allowed, as the docs say it (`1 to 10000`, `at least
    /// 1s`); empty when any value of the type is.
    pub range: fn() -> String,
}

impl Declared {
    /// The doc on one line, with the values allowed, for `--help` and the
    /// reference table.
    pub fn summary(&self) -> String {
        let doc = self.doc.split_whitespace().collect::<Vec<_>>().join(" ");
        match (self.range)() {
            range if range.is_empty() => doc,
            range => format!("{doc} Allowed: {range}."),
        }
    }
}

/// The values a setting allows, declared with it: checked when the
/// layers are resolved (an error names the key) and shown in the docs.
#[derive(Debug, Clone, Copy)]
pub struct Range<T> {
    /// The least value allowed, and whether it is allowed itself (`false`:
    /// the value must be more than it).
    pub min: Option<(T, bool)>,
    pub max: Option<T>,
}

impl<T: PartialOrd + super::value::SettingValue> Range<T> {
    pub const fn at_least(min: T) -> Range<T> {
        Range {
            min: Some((min, true)),
            max: None,
        }
    }

    pub const fn more_than(min: T) -> Range<T> {
        Range {
            min: Some((min, false)),
            max: None,
        }
    }

    pub const fn at_most(max: T) -> Range<T> {
        Range {
            min: None,
            max: Some(max),
        }
    }

    pub const fn between(min: T, max: T) -> Range<T> {
        Range {
            min: Some((min, true)),
            max: Some(max),
        }
    }

    /// An error naming the key, the range and the value unless `value`
    /// is allowed.
    pub fn check(&self, key: &str, value: &T) -> anyhow::Result<()> {
        let below = match &self.min {
            Some((min, true)) => value < min,
            Some((min, false)) => value <= min,
            None => false,
        };
        let above = self.max.as_ref().is_some_and(|max| value > max);
        if below || above {
            anyhow::bail!("{key}: must be {}, not {}", self.describe(), value.render());
        }
        Ok(())
    }

    /// `1 to 10000`, `at least 1s`, `more than 30s`, `at most 100000`.
    pub fn describe(&self) -> String {
        match (&self.min, &self.max) {
            (Some((min, true)), Some(max)) => format!("{} to {}", min.render(), max.render()),
            (Some((min, false)), Some(max)) => {
                format!("more than {} and at most {}", min.render(), max.render())
            }
            (Some((min, true)), None) => format!("at least {}", min.render()),
            (Some((min, false)), None) => format!("more than {}", min.render()),
            (None, Some(max)) => format!("at most {}", max.render()),
            (None, None) => String::new(),
        }
    }
}

/// Declares the settings. Each entry:
///
/// ```text
/// /// Doc, shown by --help and in docs/configuration.md.
/// field: Type = default_expr, key "toml.key", env "JOBLOG_…", flag Some("flag-name")
///     [, range Range::at_least(…)];
/// ```
macro_rules! settings {
    ($(
        $(#[doc = $doc:literal])+
        $field:ident : $ty:ty = $default:expr,
            key $key:literal, env $env:literal, flag $flag:expr $(, range $range:expr)?;
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
                range: || $crate::config::declare::describe_range!($($ty, $range)?),
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

            /// Each setting against the range declared with it; an error
            /// names the key, the range and the value.
            pub fn check_ranges(&self) -> anyhow::Result<()> {
                $($(
                    let range: $crate::config::declare::Range<$ty> = $range;
                    range.check($key, &self.$field)?;
                )?)+
                Ok(())
            }
        }
    };
}

/// The docs' words for a declared range; empty without one.
macro_rules! describe_range {
    () => {
        String::new()
    };
    ($ty:ty, $range:expr) => {{
        let range: $crate::config::declare::Range<$ty> = $range;
        range.describe()
    }};
}

pub(crate) use {describe_range, settings};

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Range;
    use crate::config::layers::Layers;
    use crate::config::value::ByteSize;
    use crate::config::Settings;

    #[test]
    fn a_range_allows_its_bounds_and_names_what_it_refuses() {
        let r = Range::between(1usize, 10_000);
        assert!(r.check("max_concurrency", &1).is_ok());
        assert!(r.check("max_concurrency", &10_000).is_ok());
        let e = r.check("max_concurrency", &0).unwrap_err().to_string();
        assert_eq!(e, "max_concurrency: must be 1 to 10000, not 0");
        assert!(r.check("max_concurrency", &10_001).is_err());
        let strict = Range::more_than(Duration::from_secs(30));
        assert!(strict
            .check("http.request_timeout", &Duration::from_secs(30))
            .is_err());
        assert!(strict
            .check("http.request_timeout", &Duration::from_millis(30_001))
            .is_ok());
        assert_eq!(Range::at_least(ByteSize(1024)).describe(), "at least 1KiB");
        assert_eq!(Range::at_most(100_000usize).describe(), "at most 100000");
    }

    #[test]
    fn the_defaults_are_in_their_ranges_and_a_value_out_of_one_is_refused() {
        let defaults = Settings::resolve(&Layers::default()).unwrap();
        defaults.check_ranges().unwrap();
        let mut layers = Layers::default();
        layers
            .add_file(
                std::path::Path::new("joblog.toml"),
                "[http]\nmax_viewers = 0\n",
            )
            .unwrap();
        let settings = Settings::resolve(&layers).unwrap();
        let e = settings.check_ranges().unwrap_err().to_string();
        assert_eq!(e, "http.max_viewers: must be at least 1, not 0");
    }
}
