//! The checks of a rule's parts, each naming the field at fault: its
//! conditions, its web hook (URL, headers, secret name) and its e-mail
//! addresses. Where a URL points is the sender's to check, at save and at
//! every send (`joblog-engine`).

use super::{Email, Webhook, When, MAX_HEADERS, MAX_RECIPIENTS, MAX_TEXT, RESERVED_HEADERS};
use crate::job::invalid;
use crate::ValidationError;

pub(super) fn validate_when(mut when: When) -> Result<When, ValidationError> {
    if when.states.is_empty() {
        return Err(invalid(
            "when.states",
            "empty: name the end states to tell of, such as [\"failed\", \"timed_out\"]",
        ));
    }
    if let Some(state) = when.states.iter().find(|s| !s.is_finished()) {
        return Err(invalid(
            "when.states",
            format!(
                "{:?} is not an end state (succeeded, failed, cancelled, timed_out, interrupted)",
                state.name()
            ),
        ));
    }
    when.states.sort_by_key(|s| s.name());
    when.states.dedup();
    if let Some(pattern) = &when.name {
        if pattern.is_empty() || pattern.len() > MAX_TEXT {
            return Err(invalid(
                "when.name",
                "a job name or pattern (backup*) of 1 to 2048 bytes; leave it out for any job",
            ));
        }
    }
    if when.schedule_id.is_some_and(|id| id <= 0) {
        return Err(invalid(
            "when.schedule_id",
            "a schedule id is a positive integer",
        ));
    }
    if let Some(folder) = &when.folder {
        crate::validate_folder(folder)
            .map_err(|e| invalid("when.folder", format!("{folder:?} {e}")))?;
    }
    Ok(when)
}

pub(super) fn validate_webhook(w: Webhook) -> Result<Webhook, ValidationError> {
    check_url(&w.url)?;
    if w.headers.len() > MAX_HEADERS {
        return Err(invalid(
            "webhook.headers",
            format!("at most {MAX_HEADERS} headers"),
        ));
    }
    for (name, value) in &w.headers {
        let token = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !token {
            return Err(invalid(
                "webhook.headers",
                format!("{name:?} is not a header name"),
            ));
        }
        if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            return Err(invalid(
                "webhook.headers",
                format!("{name} is set by joblog on every delivery"),
            ));
        }
        if value.len() > MAX_TEXT || value.chars().any(|c| c.is_control() && c != '\t') {
            return Err(invalid(
                "webhook.headers",
                format!("the value of {name} must be printable text of at most {MAX_TEXT} bytes"),
            ));
        }
    }
    if let Some(secret) = &w.secret_name {
        if secret.is_empty()
            || !secret
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(invalid(
                "webhook.secret_name",
                // Not echoed: what was given may be the value itself.
                "not a secret name (letters, digits and _): a rule takes the name of a secret, never its value",
            ));
        }
    }
    Ok(w)
}

/// An `http` or `https` URL with a host, no credentials and no fragment.
/// Where it points is checked by the sender, at save and at every send.
pub fn check_url(url: &str) -> Result<(), ValidationError> {
    let bad = |why: &str| invalid("webhook.url", format!("{why}: {:?}", shorten(url)));
    if url.len() > MAX_TEXT {
        return Err(invalid("webhook.url", "longer than 2048 bytes"));
    }
    let rest = if let Some(rest) = url.strip_prefix("https://") {
        rest
    } else if let Some(rest) = url.strip_prefix("http://") {
        rest
    } else {
        return Err(bad("not an http or https URL"));
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() {
        return Err(bad("no host"));
    }
    if authority.contains('@') {
        return Err(bad(
            "credentials in a URL are kept in the clear: use headers and secret_name",
        ));
    }
    if url.contains('#') {
        return Err(bad("a fragment is never sent"));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("spaces and control characters are not allowed"));
    }
    Ok(())
}

fn shorten(text: &str) -> String {
    text.chars().take(200).collect()
}

pub(super) fn validate_email(e: Email) -> Result<Email, ValidationError> {
    if e.to.is_empty() || e.to.len() > MAX_RECIPIENTS {
        return Err(invalid(
            "email.to",
            format!("1 to {MAX_RECIPIENTS} addresses"),
        ));
    }
    for address in &e.to {
        let parts: Vec<&str> = address.split('@').collect();
        let plain = address.len() <= 254
            && parts.len() == 2
            && !parts[0].is_empty()
            && parts[1].contains('.')
            && !parts[1].starts_with('.')
            && !parts[1].ends_with('.')
            && address
                .chars()
                .all(|c| c.is_ascii_graphic() && !"<>,;\"()[]\\".contains(c));
        if !plain {
            return Err(invalid(
                "email.to",
                format!(
                    "{:?} is not a plain address (name@example.com)",
                    shorten(address)
                ),
            ));
        }
    }
    Ok(e)
}
