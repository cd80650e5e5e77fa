//! The `tracing` layer: spans with a `unit` field become operation units
//! (kept in the span's own extensions, so threads share no lock), events
//! join the innermost unit around them, and a unit is handed to the
//! router when its span closes. An event outside any unit is a unit of
//! its own. All the calling thread does is capture values and push.

use std::cell::Cell;
use std::time::Instant;

use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use super::event::{Capture, Event};
use super::router::Submitter;
use super::unit::{Unit, UnitKind, UNIT_FIELD};

/// A unit being built, in its span's extensions.
struct Building {
    unit: Unit,
    started: Instant,
}

/// Hands what `tracing` sees to an [`super::Oplog`].
pub struct OplogLayer {
    submitter: Submitter,
}

impl OplogLayer {
    pub(crate) fn new(submitter: Submitter) -> OplogLayer {
        OplogLayer { submitter }
    }
}

thread_local! {
    /// Set on the log's own threads: what they log must never wait for
    /// a queue they themselves drain.
    static INTERNAL: Cell<bool> = const { Cell::new(false) };
}

/// Marks this thread as one of the log's own (a sink's or the router's).
pub(crate) fn mark_internal() {
    INTERNAL.with(|i| i.set(true));
}

pub(crate) fn is_internal() -> bool {
    INTERNAL.with(Cell::get)
}

/// The kind a span's attributes give, when it is a unit.
fn unit_kind(attrs: &Attributes<'_>) -> Option<UnitKind> {
    struct Find(Option<UnitKind>);
    impl tracing::field::Visit for Find {
        fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
            if field.name() == UNIT_FIELD {
                self.0 = UnitKind::parse(value);
            }
        }
        fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
    }
    attrs.metadata().fields().field(UNIT_FIELD)?;
    let mut find = Find(None);
    attrs.record(&mut find);
    find.0
}

impl<S> Layer<S> for OplogLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(kind) = unit_kind(attrs) else {
            return;
        };
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut unit = Unit::new(kind);
        attrs.record(&mut Capture {
            message: None,
            fields: &mut unit.fields,
        });
        unit.fields.retain(|(name, _)| *name != UNIT_FIELD);
        span.extensions_mut().insert(Building {
            unit,
            started: Instant::now(),
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut extensions = span.extensions_mut();
        if let Some(building) = extensions.get_mut::<Building>() {
            values.record(&mut Capture {
                message: None,
                fields: &mut building.unit.fields,
            });
        }
    }

    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        let captured = Event::from_tracing(event);
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope {
                let mut extensions = span.extensions_mut();
                if let Some(building) = extensions.get_mut::<Building>() {
                    building.unit.push_event(captured);
                    return;
                }
            }
        }
        self.submitter.submit(Unit::server_event(captured));
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let building = span.extensions_mut().remove::<Building>();
        if let Some(Building { mut unit, started }) = building {
            unit.duration = started.elapsed();
            self.submitter.submit(unit);
        }
    }
}
