//! Sending a notification by e-mail: one SMTP transport for the node
//! (`notify.smtp_url`: `smtps://` for TLS, `smtp://…?tls=required` for
//! STARTTLS, credentials in the URL), a message of text and HTML with the
//! same content, and what the server's answer means for the delivery: a
//! 4xx or a failed connection is tried again, a 5xx is refused for good.

use std::time::Duration;

use joblog_core::notify::{Mail, TryOutcome};
use lettre::message::header::{HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

/// The node's SMTP sender, when `notify.smtp_url` is set.
#[derive(Clone)]
pub(crate) struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl Mailer {
    /// The sender of `url` (its password never in an error), writing from
    /// `from`.
    pub(crate) fn new(url: &str, from: &str, timeout: Duration) -> Result<Mailer, String> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            .map_err(|e| {
                format!(
                    "notify.smtp_url is not an SMTP URL (smtps://host:465, smtp://host:587?tls=required): {}",
                    e.to_string().replace(url, "…")
                )
            })?
            .timeout(Some(timeout))
            .build();
        let from = from
            .parse::<Mailbox>()
            .map_err(|e| format!("notify.smtp_from is not an address ({from:?}): {e}"))?;
        Ok(Mailer { transport, from })
    }

    /// Sends `mail` to each of `to` in one message.
    pub(crate) async fn send(
        &self,
        to: &[String],
        mail: &Mail,
        delivery: Option<i64>,
    ) -> TryOutcome {
        let mut builder = Message::builder()
            .from(self.from.clone())
            .subject(mail.subject.as_str());
        for address in to {
            match address.parse::<Mailbox>() {
                Ok(mailbox) => builder = builder.to(mailbox),
                Err(e) => {
                    return TryOutcome::Refused {
                        status: None,
                        error: format!("{address:?} is not an address: {e}"),
                    }
                }
            }
        }
        if let Some(id) = delivery {
            builder = builder.raw_header(HeaderValue::new(
                HeaderName::new_from_ascii_str("Joblog-Delivery"),
                id.to_string(),
            ));
        }
        let message = match builder.multipart(MultiPart::alternative_plain_html(
            mail.text.clone(),
            mail.html.clone(),
        )) {
            Ok(m) => m,
            Err(e) => {
                return TryOutcome::Refused {
                    status: None,
                    error: format!("the message could not be made: {e}"),
                }
            }
        };
        match self.transport.send(message).await {
            Ok(answer) => TryOutcome::Delivered {
                status: Some(u16::from(answer.code())),
            },
            Err(e) => {
                let status = e.status().map(u16::from);
                let error = format!("SMTP: {e}");
                if e.is_permanent() {
                    TryOutcome::Refused { status, error }
                } else {
                    TryOutcome::Retry { status, error }
                }
            }
        }
    }
}
