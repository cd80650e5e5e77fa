//! Keeps the API's documents true: every route of [`crate::routes::ROUTES`] and every
//! [`ErrorCode`] appears in the OpenAPI document and in `docs/api.md`.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::error::ErrorCode;

fn openapi() -> Value {
    serde_json::from_str(include_str!("openapi.json")).expect("openapi.json is JSON")
}

fn api_docs() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/api.md");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `(path, method)` of every declared route, the method in lower case as
/// OpenAPI writes it.
fn routes() -> BTreeSet<(String, String)> {
    crate::routes::ROUTES
        .iter()
        .map(|r| (r.path.to_string(), r.method.as_str().to_lowercase()))
        .collect()
}

/// `(method, path, access)` of every declared route.
fn rules() -> impl Iterator<Item = (&'static str, &'static str, crate::rules::Access)> {
    crate::routes::ROUTES
        .iter()
        .map(|r| (r.method.as_str(), r.path, r.access))
}

#[test]
fn every_route_is_in_the_openapi_document() {
    let doc = openapi();
    let routes = routes();
    assert!(routes.len() >= 10, "routes read from app(): {routes:?}");
    for (path, method) in &routes {
        // The document's paths are relative to /api/v1, plus the few
        // outside it, which it lists as they are.
        let key = path.strip_prefix("/api/v1").unwrap_or(path);
        let item = &doc["paths"][key];
        assert!(
            item[method.as_str()].is_object(),
            "{} {path} is routed but not in openapi.json",
            method.to_uppercase()
        );
    }
}

#[test]
fn every_error_code_is_in_the_openapi_document_with_its_status() {
    let doc = openapi();
    let code = &doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"];
    let listed: Vec<&str> = code["enum"]
        .as_array()
        .expect("an enum of codes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let ours: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(listed, ours, "openapi.json's codes differ from ErrorCode");
    for c in ErrorCode::ALL {
        assert_eq!(
            code["x-error-codes"][c.as_str()]["status"].as_u64(),
            Some(u64::from(c.status().as_u16())),
            "{}",
            c.as_str()
        );
    }
}

#[test]
fn the_api_docs_name_every_route_and_error_code() {
    let docs = api_docs();
    for (path, method) in routes() {
        let line = format!("{} {path}", method.to_uppercase());
        assert!(
            docs.contains(&line),
            "docs/api.md does not document `{line}`"
        );
    }
    for c in ErrorCode::ALL {
        let row = format!("| `{}` | {} |", c.as_str(), c.status().as_u16());
        assert!(docs.contains(&row), "docs/api.md has no row `{row}`");
    }
}

/// The OpenAPI document tells each operation's role as the rules do.
#[test]
fn the_openapi_document_gives_each_route_its_role() {
    let doc = openapi();
    for (method, path, access) in rules() {
        let key = path.strip_prefix("/api/v1").unwrap_or(path);
        let role = match access {
            crate::rules::Access::Public => "public",
            crate::rules::Access::Role(r, _) => r.name(),
        };
        assert_eq!(
            doc["paths"][key][method.to_lowercase()]["x-required-role"].as_str(),
            Some(role),
            "{method} {path}"
        );
    }
}

/// Every operation lists the refusals its rule can give: 401 and 403
/// where a token is needed (a role too low, or a browser's request from
/// another site, which is refused for reads too); public ones list
/// neither, but for signing in, whose own answers they are (a wrong
/// password, a disabled user, a provider's token not to be trusted, a
/// person without a role). And every one lists what any request can
/// meet before its route: 408, 414, 421, 500 and 503.
#[test]
fn the_openapi_document_lists_each_routes_refusals() {
    let doc = openapi();
    for (method, path, access) in rules() {
        let key = path.strip_prefix("/api/v1").unwrap_or(path);
        let responses = &doc["paths"][key][method.to_lowercase()]["responses"];
        let lists = |status: &str| responses[status].is_object();
        let guarded = matches!(access, crate::rules::Access::Role(..))
            || [
                ("POST", "/api/v1/session"),
                ("GET", "/api/v1/session/oidc/callback"),
            ]
            .contains(&(method, path));
        assert_eq!(lists("401"), guarded, "{method} {path}: 401");
        assert_eq!(lists("403"), guarded, "{method} {path}: 403");
        for status in ["408", "414", "421", "500", "503"] {
            assert!(lists(status), "{method} {path}: {status}");
        }
    }
}

/// docs/api.md's table of routes, roles and folders is the rules'.
#[test]
fn the_api_docs_give_each_route_its_role() {
    let docs = api_docs();
    for (method, path, access) in rules() {
        let (role, reach) = match access {
            crate::rules::Access::Public => ("public", "—"),
            crate::rules::Access::Role(r, reach) => (r.name(), reach.described()),
        };
        let row = format!("| `{method} {path}` | {role} | {reach} |");
        assert!(docs.contains(&row), "docs/api.md has no row `{row}`");
    }
}
