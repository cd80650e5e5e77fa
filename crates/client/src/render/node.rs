//! Nodes as text: the `joblog nodes` table, the answering node marked.

use super::escape_display;
use super::job::{short_time, table};
use crate::wire::{labels_text, NodeList, NodeView, SchedulerView};

pub(super) fn nodes_table(list: &NodeList) -> String {
    let header = [
        "NAME",
        "STATE",
        "RUNNING",
        "LAST HEARTBEAT",
        "STARTED",
        "VERSION",
        "LABELS",
        "SECRETS",
    ];
    let rows: Vec<[String; 8]> = list
        .nodes
        .iter()
        .map(|n| {
            let mut name = escape_display(&n.name, false).into_owned();
            if n.name == list.this_node {
                name.push_str(" *");
            }
            [
                name,
                escape_display(&n.state, false).into_owned(),
                n.running_jobs.to_string(),
                short_time(Some(&n.heartbeat_at)),
                short_time(Some(&n.started_at)),
                n.version.as_deref().map_or_else(
                    || "-".to_string(),
                    |v| escape_display(v, false).into_owned(),
                ),
                escape_display(&labels_text(&n.labels), false).into_owned(),
                if n.secret_names.is_empty() {
                    "-".to_string()
                } else {
                    escape_display(&n.secret_names.join(","), false).into_owned()
                },
            ]
        })
        .collect();
    let mut text = table(
        &header,
        &rows,
        &[false, false, true, false, false, false, false, false],
    );
    text.push_str("(* the node that answered)\n");
    text
}

/// One node after a drain or undrain: `node db-1: draining, 2 jobs running`.
pub(super) fn node_line(n: &NodeView) -> String {
    let running = match n.running_jobs {
        1 => "1 job running".to_string(),
        k => format!("{k} jobs running"),
    };
    format!(
        "node {}: {}, {running}\n",
        escape_display(&n.name, false),
        escape_display(&n.state, false)
    )
}

/// Whether schedules fire: `scheduler: paused since … by alice`.
pub(super) fn scheduler_line(s: &SchedulerView) -> String {
    if !s.paused {
        return "scheduler: running (schedules fire)\n".into();
    }
    let since = s
        .paused_at
        .as_deref()
        .map_or_else(String::new, |t| format!(" since {}", short_time(Some(t))));
    let by = s
        .paused_by
        .as_deref()
        .map_or_else(String::new, |b| format!(" by {}", escape_display(b, false)));
    format!("scheduler: paused{since}{by}: no schedule fires until `joblog scheduler resume`\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::NodeView;

    #[test]
    fn nodes_are_listed_with_the_answering_one_marked() {
        let node = |name: &str, state: &str, running: u64| NodeView {
            name: name.into(),
            state: state.into(),
            version: Some("0.1.0".into()),
            started_at: "2026-11-22T08:00:00.000000Z".into(),
            heartbeat_at: "2026-11-22T10:15:01.000000Z".into(),
            running_jobs: running,
            labels: if running > 5 {
                [("role".to_string(), "db".to_string())].into()
            } else {
                Default::default()
            },
            secret_names: if running > 5 {
                vec!["API_KEY".into(), "DB_PASSWORD".into()]
            } else {
                Vec::new()
            },
        };
        let list = NodeList {
            nodes: vec![node("a:7878", "up", 3), node("b:7878", "lapsed", 12)],
            this_node: "a:7878".into(),
        };
        assert_eq!(
            nodes_table(&list),
            "NAME      STATE   RUNNING  LAST HEARTBEAT           STARTED                  VERSION  LABELS   SECRETS\n\
             a:7878 *  up            3  2026-11-22 10:15:01 UTC  2026-11-22 08:00:00 UTC  0.1.0    -        -\n\
             b:7878    lapsed       12  2026-11-22 10:15:01 UTC  2026-11-22 08:00:00 UTC  0.1.0    role=db  API_KEY,DB_PASSWORD\n\
             (* the node that answered)\n"
        );
    }

    #[test]
    fn a_drain_and_the_scheduler_say_what_they_are_in_a_line() {
        let node = NodeView {
            name: "db-1".into(),
            state: "draining".into(),
            version: None,
            started_at: "2026-11-22T08:00:00.000000Z".into(),
            heartbeat_at: "2026-11-22T10:15:01.000000Z".into(),
            running_jobs: 2,
            secret_names: Vec::new(),
            labels: Default::default(),
        };
        assert_eq!(node_line(&node), "node db-1: draining, 2 jobs running\n");
        let paused = SchedulerView {
            paused: true,
            paused_at: Some("2026-11-22T10:15:01.000000Z".into()),
            paused_by: Some("alice".into()),
        };
        assert_eq!(
            scheduler_line(&paused),
            "scheduler: paused since 2026-11-22 10:15:01 UTC by alice: no schedule fires until `joblog scheduler resume`\n"
        );
        let running = SchedulerView {
            paused: false,
            paused_at: None,
            paused_by: None,
        };
        assert_eq!(
            scheduler_line(&running),
            "scheduler: running (schedules fire)\n"
        );
    }
}
