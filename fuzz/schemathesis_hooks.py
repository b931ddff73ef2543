"""Schemathesis hooks for the Causeway gateway (loaded with SCHEMATHESIS_HOOKS=schemathesis_hooks).

`causeway_positive_data_acceptance` replaces Schemathesis' `positive_data_acceptance`: a request
the OpenAPI document calls valid must not be refused with 400, except with one of the codes below,
each a refusal that depends on the cluster's state or on byte counts, which no JSON Schema can
state. Any other 400 on schema-valid input (INVALID_OPTION, INVALID_LEVEL, INVALID_REQUEST,
INVALID_JSON, INVALID_KEY, INVALID_HLC, UNSUPPORTED_MEDIA_TYPE, ...) means the document and the
gateway disagree, and fails the run.
"""

import json

import schemathesis
import re

from schemathesis.core.failures import Failure, Severity

# code -> why a schema-valid request may still get it
STATEFUL_REFUSALS = {
    # A read vector naming a log index the region has not written yet, or a region twice.
    "VECTOR_UNREACHABLE": "the index is not written yet",
    "INVALID_VECTOR": "a region named twice, or an index above 2^53-1",
    # A causeway-context must be one the gateway issued for a key of a siblings namespace.
    "INVALID_CONTEXT": "not a context of this cluster, or the key is not in a siblings namespace",
    # causeway-dt further ahead of the gateway's clock than limits.maxSkewMs.
    "CLOCK_SKEW_EXCEEDED": "an HLC too far ahead of the gateway's clock",
    # Limits in bytes of UTF-8 or of JSON; a schema counts characters.
    "KEY_TOO_LARGE": "a key over limits.maxKeyBytes bytes of UTF-8",
    "VALUE_TOO_LARGE": "a value over limits.maxValueBytes bytes of JSON",
    "INVALID_ELEMENT": "an element over 1 KiB of UTF-8, or a set context the gateway did not sign",
    # Which namespaces are transactional is the cluster's configuration (`--transactional`); the
    # document describes every gateway's routes alike.
    "NOT_TRANSACTIONAL": "a key outside the cluster's transactional namespaces",
    # A change-feed cursor names its cluster and shape: no schema can tell one of this cluster.
    "INVALID_CURSOR": "a cursor of another cluster, or none the gateway issued",
}


class UnexpectedRefusal(Failure):
    def __init__(self, *, operation: str, code: str, message: str) -> None:
        self.operation = operation
        self.code = code
        self.title = "Schema-valid request refused with a code the document could have prevented"
        self.message = message
        self.case_id = None
        self.severity = Severity.HIGH

    @property
    def _unique_key(self) -> str:
        return self.code


@schemathesis.check
def causeway_positive_data_acceptance(ctx, response, case):
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 400:
        return None
    try:
        code = json.loads(response.text).get("code")
    except ValueError:
        code = None
    if code in STATEFUL_REFUSALS:
        return None
    # Schemathesis' coverage phase sends header values that break the document's own pattern
    # and still calls the request valid: those are negative cases, judged by the pattern here.
    if not _headers_match_document(case):
        return None
    # Two query parameters that exclude each other: OpenAPI describes parameters one by one, so
    # the document can only say it in their descriptions.
    if code == "INVALID_OPTION" and "from or after, not both" in response.text:
        return None
    if code == "INVALID_REQUEST" and "either prefix or keys, not both" in response.text:
        return None
    # A read set's keys read once, tids at most the snapshot and naming a version of their key:
    # across items, across fields and the log's state, which no schema states.
    if code == "INVALID_READ_SET" and any(
        why in response.text
        for why in ("is read twice", "is after the snapshot", "valid Unicode", "made no version")
    ):
        return None
    # A watched key's percent escapes must decode to UTF-8: bytes, which a pattern cannot check.
    if code == "INVALID_KEY" and "not valid percent-encoded UTF-8" in response.text:
        return None
    raise UnexpectedRefusal(
        operation=case.operation.label,
        code=str(code),
        message=f"400 {code} for a request the OpenAPI document calls valid: {response.text[:300]}",
    )


def _headers_match_document(case) -> bool:
    """Whether every header the case sends matches its parameter's pattern in the document."""
    try:
        parameters = case.operation.definition.raw.get("parameters", [])
    except AttributeError:
        return True
    headers = {k.lower(): v for k, v in (case.headers or {}).items()}
    for parameter in parameters:
        if parameter.get("in") != "header":
            continue
        pattern = (parameter.get("schema") or {}).get("pattern")
        value = headers.get(str(parameter.get("name", "")).lower())
        if pattern is None or value is None:
            continue
        if not isinstance(value, str) or re.search(pattern, value) is None:
            return False
    return True
