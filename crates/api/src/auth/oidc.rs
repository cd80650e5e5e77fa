//! Single sign-on through an OpenID provider: the authorization code flow
//! with PKCE, the provider found by discovery, its ID token checked by the
//! `openidconnect` crate (signature against the provider's published
//! keys, issuer, audience, expiry, nonce, the access token's hash), and
//! the person's role taken from one claim by the configured mapping.
//!
//! The provider's description and keys are fetched when first needed and
//! kept an hour; an ID token signed by a key not among them fetches them
//! again once (the provider rotated its keys). Nothing here stores: the
//! handler keeps the sign-in begun in the store, so its callback may reach
//! any node, once.

use std::time::{Duration, Instant};

use axum::http;
use joblog_core::{PendingSignIn, Role, Timestamp};
use openidconnect::core::{
    CoreAuthenticationFlow, CoreClient, CoreGenderClaim, CoreIdToken, CoreJsonWebKey,
    CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm, CoreProviderMetadata,
};
use openidconnect::{
    AccessTokenHash, AdditionalClaims, AuthorizationCode, ClaimsVerificationError, ClientId,
    ClientSecret, CsrfToken, IdToken, IdTokenClaims, IssuerUrl, Nonce, OAuth2TokenResponse,
    PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope, SignatureVerificationError,
    TokenResponse, UserInfoClaims,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// How long a sign-in sent to the provider may take to come back.
pub const SIGN_IN_TTL: Duration = Duration::from_secs(600);
/// How long the provider's description and keys are kept.
const METADATA_TTL: Duration = Duration::from_secs(3600);
/// Keys are fetched again on an unknown one at most this often, so a
/// forged token cannot make every sign-in a fetch.
const REFETCH_AT_MOST_EVERY: Duration = Duration::from_secs(60);
/// A provider's answer longer than this is refused (discovery, keys,
/// tokens and user info are a few KiB).
const MAX_ANSWER_BYTES: usize = 1 << 20;
/// The longest `return` path kept with a sign-in.
const MAX_RETURN_TO: usize = 1024;

/// Where the provider sends people back, under the server's public URL.
pub const CALLBACK_PATH: &str = "/api/v1/session/oidc/callback";

/// Single sign-on's settings (`auth.oidc.*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcOptions {
    /// The provider's issuer URL; discovery reads
    /// `<issuer>/.well-known/openid-configuration`.
    pub issuer: String,
    pub client_id: String,
    pub client_secret: Option<String>,
    /// Asked for besides `openid`.
    pub scopes: Vec<String>,
    /// The claim whose value (text or a list of texts) maps to a role;
    /// dots reach into objects (`realm_access.roles`).
    pub role_claim: String,
    /// Claim value → role; the highest role any value maps to wins.
    pub roles: Vec<(String, Role)>,
    /// The claim that names the person in joblog.
    pub name_claim: String,
    /// Shown on the sign-in page: "Sign in with …".
    pub label: String,
    /// The server's public URL, which the callback path is joined to.
    pub public_url: String,
}

impl OidcOptions {
    pub fn redirect_url(&self) -> String {
        format!("{}{CALLBACK_PATH}", self.public_url.trim_end_matches('/'))
    }
}

/// Why single sign-on failed: logged in full; the person sees a page
/// saying which step failed.
#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    #[error("the OpenID provider could not be reached or described itself wrongly: {0}")]
    Provider(String),
    #[error("the OpenID provider refused the authorization code: {0}")]
    Token(String),
    #[error("the ID token was not accepted: {0}")]
    IdToken(String),
    #[error("the provider's claims name nobody: {0}")]
    Claims(String),
}

/// A person the provider vouched for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// `issuer sub`.
    pub subject: String,
    /// Their name claim, a valid user name.
    pub name: String,
    /// The role their claim maps to; `None`: no value maps.
    pub role: Option<Role>,
    /// The role claim's values, for the page that refuses them.
    pub claim_values: Vec<String>,
}

/// A sign-in to send the person off with.
#[derive(Debug)]
pub struct Begun {
    /// The provider's authorization URL.
    pub url: String,
    /// The `state` in it, which the browser keeps in a cookie too.
    pub state: String,
    pub pending: PendingSignIn,
}

/// Every claim, standard or not, so any may be the role or the name.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct AllClaims {
    #[serde(flatten)]
    claims: Map<String, Value>,
}
impl AdditionalClaims for AllClaims {}

type FullIdToken =
    IdToken<AllClaims, CoreGenderClaim, CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm>;

struct Cached {
    metadata: CoreProviderMetadata,
    fetched: Instant,
}

/// The provider, as this node knows it.
pub struct Oidc {
    options: OidcOptions,
    http: Http,
    cached: tokio::sync::Mutex<Option<Cached>>,
}

impl std::fmt::Debug for Oidc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Oidc")
            .field("issuer", &self.options.issuer)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HttpError(String);

impl Oidc {
    pub fn new(options: OidcOptions) -> Result<Oidc, String> {
        IssuerUrl::new(options.issuer.clone())
            .map_err(|e| format!("auth.oidc.issuer: not a URL: {e}"))?;
        RedirectUrl::new(options.redirect_url())
            .map_err(|e| format!("http.public_url: not a URL: {e}"))?;
        // The process's TLS is rustls on ring, as everywhere in joblog.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            // A redirect would let the provider's answer send joblog anywhere.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(15))
            .user_agent(concat!("joblog/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the OpenID client: {e}"))?;
        Ok(Oidc {
            options,
            http: Http(http),
            cached: tokio::sync::Mutex::new(None),
        })
    }

    pub fn options(&self) -> &OidcOptions {
        &self.options
    }

    /// The provider's description and keys: kept, or fetched when older
    /// than an hour, or when `refetch` and older than a minute.
    async fn metadata(&self, refetch: bool) -> Result<(CoreProviderMetadata, bool), OidcError> {
        let mut cached = self.cached.lock().await;
        if let Some(c) = cached.as_ref() {
            let age = c.fetched.elapsed();
            let fresh = if refetch {
                age < REFETCH_AT_MOST_EVERY
            } else {
                age < METADATA_TTL
            };
            if fresh {
                return Ok((c.metadata.clone(), false));
            }
        }
        let issuer = IssuerUrl::new(self.options.issuer.clone())
            .map_err(|e| OidcError::Provider(e.to_string()))?;
        let metadata = CoreProviderMetadata::discover_async(issuer, &self.http)
            .await
            .map_err(|e| OidcError::Provider(chain(&e)))?;
        *cached = Some(Cached {
            metadata: metadata.clone(),
            fetched: Instant::now(),
        });
        Ok((metadata, true))
    }

    fn client(&self, metadata: CoreProviderMetadata) -> Result<CoreClientWith, OidcError> {
        let redirect = RedirectUrl::new(self.options.redirect_url())
            .map_err(|e| OidcError::Provider(e.to_string()))?;
        Ok(CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.options.client_id.clone()),
            self.options.client_secret.clone().map(ClientSecret::new),
        )
        .set_redirect_uri(redirect))
    }

    /// Starts a sign-in: the provider's URL to send the person to, with
    /// a new state, nonce and PKCE challenge, and what the callback needs.
    pub async fn begin(&self, return_to: Option<&str>) -> Result<Begun, OidcError> {
        let (metadata, _) = self.metadata(false).await?;
        let client = self.client(metadata)?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = client.authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        );
        for scope in &self.options.scopes {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, state, nonce) = request.set_pkce_challenge(challenge).url();
        let now = Timestamp::now();
        let ttl = i64::try_from(SIGN_IN_TTL.as_micros()).unwrap_or(i64::MAX);
        Ok(Begun {
            url: url.to_string(),
            pending: PendingSignIn {
                state_hash: super::secret::hash(state.secret()),
                nonce: nonce.secret().clone(),
                pkce_verifier: verifier.secret().clone(),
                return_to: safe_return(return_to),
                created_at: now,
                expires_at: Timestamp(now.micros().saturating_add(ttl)),
            },
            state: state.secret().clone(),
        })
    }

    /// Finishes a sign-in: exchanges the code (with the PKCE verifier),
    /// checks the ID token, and reads who the person is and their role.
    pub async fn finish(&self, code: String, pending: &PendingSignIn) -> Result<Person, OidcError> {
        let (metadata, fresh) = self.metadata(false).await?;
        let client = self.client(metadata)?;
        let http = &self.http;
        let tokens = client
            .exchange_code(AuthorizationCode::new(code))
            .map_err(|e| OidcError::Provider(e.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(pending.pkce_verifier.clone()))
            .request_async(http)
            .await
            .map_err(|e| OidcError::Token(token_error(&e)))?;
        let core_token: &CoreIdToken = tokens
            .id_token()
            .ok_or_else(|| OidcError::IdToken("the provider sent no ID token".into()))?;
        // Read again with every claim kept, checked the same way.
        let id_token: FullIdToken = core_token
            .to_string()
            .parse()
            .map_err(|e| OidcError::IdToken(format!("unreadable: {e}")))?;
        let nonce = Nonce::new(pending.nonce.clone());
        let checked = match self.check(&client, &id_token, &nonce) {
            // An unknown key: the provider may have rotated its keys.
            Err(ClaimsVerificationError::SignatureVerification(
                SignatureVerificationError::NoMatchingKey,
            )) if !fresh => {
                let (metadata, _) = self.metadata(true).await?;
                let client = self.client(metadata)?;
                self.check(&client, &id_token, &nonce)
                    .map(|(claims, key)| (claims, key, client))
            }
            other => other.map(|(claims, key)| (claims, key, client)),
        };
        let (claims, (alg, key), client) = checked.map_err(|e| OidcError::IdToken(chain(&e)))?;
        if let Some(expected) = claims.access_token_hash() {
            let actual = AccessTokenHash::from_token(tokens.access_token(), &alg, &key)
                .map_err(|e| OidcError::IdToken(format!("the access token's hash: {e}")))?;
            if actual != *expected {
                return Err(OidcError::IdToken(
                    "the access token is not the one the ID token was made with".into(),
                ));
            }
        }
        let subject = claims.subject().clone();
        let mut all = to_map(&claims)?;
        // Providers put groups and names in the ID token or only in the
        // user info: ask it when the token lacks one.
        let lacking = |all: &Map<String, Value>| {
            claim(all, &self.options.role_claim).is_none()
                || claim(all, &self.options.name_claim).is_none()
        };
        if lacking(&all) {
            if let Ok(request) =
                client.user_info(tokens.access_token().clone(), Some(subject.clone()))
            {
                let info: UserInfoClaims<AllClaims, CoreGenderClaim> = request
                    .request_async(http)
                    .await
                    .map_err(|e| OidcError::Claims(format!("the user info: {}", chain(&e))))?;
                for (k, v) in to_map(&info)? {
                    all.entry(k).or_insert(v);
                }
            }
        }
        let name = match claim(&all, &self.options.name_claim) {
            Some(Value::String(name)) => name.clone(),
            _ => {
                return Err(OidcError::Claims(format!(
                    "no text claim {:?} (auth.oidc.name_claim) to name the user by",
                    self.options.name_claim
                )))
            }
        };
        joblog_core::validate_user_name(&name).map_err(|e| {
            OidcError::Claims(format!(
                "{:?} (claim {:?}) is not a user name: {e}",
                name, self.options.name_claim
            ))
        })?;
        let claim_values = texts(claim(&all, &self.options.role_claim));
        Ok(Person {
            subject: format!("{} {}", self.options.issuer, subject.as_str()),
            name,
            role: map_role(&claim_values, &self.options.roles),
            claim_values,
        })
    }

    /// The ID token's claims, checked, with the algorithm and key that
    /// signed it.
    #[allow(clippy::type_complexity)]
    fn check<'t>(
        &self,
        client: &CoreClientWith,
        token: &'t FullIdToken,
        nonce: &Nonce,
    ) -> Result<
        (
            &'t IdTokenClaims<AllClaims, CoreGenderClaim>,
            (CoreJwsSigningAlgorithm, CoreJsonWebKey),
        ),
        ClaimsVerificationError,
    > {
        let verifier = client
            .id_token_verifier()
            .set_allowed_algs(ASYMMETRIC_ALGS.iter().cloned());
        let claims = token.claims(&verifier, nonce)?;
        let alg = token
            .signing_alg()
            .map_err(ClaimsVerificationError::SignatureVerification)?;
        let key = token
            .signing_key(&verifier)
            .map_err(ClaimsVerificationError::SignatureVerification)?
            .clone();
        Ok((claims, (alg.clone(), key)))
    }
}

/// The client as built from the provider's description: the
/// authorization and token endpoints set, user info if described.
type CoreClientWith = CoreClient<
    openidconnect::EndpointSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointMaybeSet,
    openidconnect::EndpointMaybeSet,
>;

/// Signatures by the provider's published keys; not `none`, and not a
/// MAC keyed by the client secret.
const ASYMMETRIC_ALGS: &[CoreJwsSigningAlgorithm] = &[
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha384,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha512,
    CoreJwsSigningAlgorithm::RsaSsaPssSha256,
    CoreJwsSigningAlgorithm::RsaSsaPssSha384,
    CoreJwsSigningAlgorithm::RsaSsaPssSha512,
    CoreJwsSigningAlgorithm::EcdsaP256Sha256,
    CoreJwsSigningAlgorithm::EcdsaP384Sha384,
    CoreJwsSigningAlgorithm::EdDsa,
];

/// joblog's HTTP client as `openidconnect` calls it: a boxed `Send`
/// future (a closure's would not be `Send` for every lifetime, as axum's
/// handlers must be).
struct Http(reqwest::Client);

impl<'c> openidconnect::AsyncHttpClient<'c> for Http {
    type Error = HttpError;
    type Future = std::pin::Pin<
        Box<
            dyn std::future::Future<Output = Result<openidconnect::HttpResponse, HttpError>>
                + Send
                + 'c,
        >,
    >;

    fn call(&'c self, request: openidconnect::HttpRequest) -> Self::Future {
        Box::pin(send(&self.0, request))
    }
}

/// One request to the provider.
async fn send(
    http: &reqwest::Client,
    request: openidconnect::HttpRequest,
) -> Result<openidconnect::HttpResponse, HttpError> {
    let (parts, body) = request.into_parts();
    let mut answer = http
        .request(parts.method, parts.uri.to_string())
        .headers(parts.headers)
        .body(body)
        .send()
        .await
        .map_err(|e| HttpError(chain(&e)))?;
    let mut out = http::Response::builder().status(answer.status());
    for (name, value) in answer.headers() {
        out = out.header(name, value);
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = answer.chunk().await.map_err(|e| HttpError(chain(&e)))? {
        if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(HttpError(format!(
                "the answer is longer than {MAX_ANSWER_BYTES} bytes"
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    out.body(bytes).map_err(|e| HttpError(e.to_string()))
}

/// An error with its causes, `a: b: c`.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// The token endpoint's refusal with its OAuth error code when it gave one.
fn token_error<RE: std::error::Error + 'static>(
    e: &openidconnect::RequestTokenError<
        RE,
        openidconnect::StandardErrorResponse<openidconnect::core::CoreErrorResponseType>,
    >,
) -> String {
    match e {
        openidconnect::RequestTokenError::ServerResponse(r) => match r.error_description() {
            Some(d) => format!("{}: {d}", r.error()),
            None => r.error().to_string(),
        },
        other => chain(other),
    }
}

fn to_map(claims: &impl Serialize) -> Result<Map<String, Value>, OidcError> {
    match serde_json::to_value(claims) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(OidcError::Claims("the claims are not an object".into())),
        Err(e) => Err(OidcError::Claims(e.to_string())),
    }
}

/// The claim at `path`, dots reaching into objects.
fn claim<'a>(claims: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    if let Some(v) = claims.get(path) {
        return Some(v);
    }
    let mut parts = path.split('.');
    let mut value = claims.get(parts.next()?)?;
    for part in parts {
        value = value.as_object()?.get(part)?;
    }
    Some(value)
}

/// A claim's text values: a text, or the texts of a list.
fn texts(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

/// The highest role any of `values` maps to.
pub fn map_role(values: &[String], roles: &[(String, Role)]) -> Option<Role> {
    roles
        .iter()
        .filter(|(value, _)| values.iter().any(|v| v == value))
        .map(|(_, role)| *role)
        .max()
}

/// Where to go once signed in: a path of this server, or `/`. Never a
/// URL elsewhere (`//host`, `/\host`, `https:…`).
pub fn safe_return(return_to: Option<&str>) -> String {
    match return_to {
        Some(p)
            if p.starts_with('/')
                && !p.starts_with("//")
                && !p.starts_with("/\\")
                && p.len() <= MAX_RETURN_TO
                && !p.chars().any(char::is_control) =>
        {
            p.to_string()
        }
        _ => "/".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn values(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_highest_mapped_role_wins_and_none_maps_to_none() {
        let roles = vec![
            ("ops".to_string(), Role::Operator),
            ("staff".to_string(), Role::Viewer),
            ("joblog-admins".to_string(), Role::Admin),
        ];
        assert_eq!(
            map_role(&values(&["staff", "ops"]), &roles),
            Some(Role::Operator)
        );
        assert_eq!(
            map_role(&values(&["joblog-admins", "staff"]), &roles),
            Some(Role::Admin)
        );
        assert_eq!(map_role(&values(&["sales"]), &roles), None);
        assert_eq!(map_role(&[], &roles), None);
        assert_eq!(map_role(&values(&["OPS"]), &roles), None, "exact match");
    }

    #[test]
    fn a_claim_is_text_or_a_list_and_dots_reach_into_objects() {
        let claims = json!({
            "groups": ["ops", 7, "staff"],
            "role": "admin",
            "realm_access": {"roles": ["ops"]},
            "odd.name": "kept",
        });
        let claims = claims.as_object().unwrap();
        assert_eq!(texts(claim(claims, "groups")), values(&["ops", "staff"]));
        assert_eq!(texts(claim(claims, "role")), values(&["admin"]));
        assert_eq!(texts(claim(claims, "realm_access.roles")), values(&["ops"]));
        assert_eq!(texts(claim(claims, "odd.name")), values(&["kept"]));
        assert!(claim(claims, "realm_access.missing").is_none());
        assert!(texts(claim(claims, "realm_access")).is_empty());
    }

    #[test]
    fn only_a_path_of_this_server_is_returned_to() {
        assert_eq!(safe_return(Some("/#/jobs/7")), "/#/jobs/7");
        assert_eq!(safe_return(Some("/ui/?x=1")), "/ui/?x=1");
        for bad in [
            "//evil.example",
            "/\\evil.example",
            "https://evil.example/",
            "evil",
            "/a\nb",
            "",
        ] {
            assert_eq!(safe_return(Some(bad)), "/", "{bad:?}");
        }
        assert_eq!(safe_return(None), "/");
        assert_eq!(safe_return(Some(&format!("/{}", "a".repeat(2000)))), "/");
    }
}
