"""Smoke test of the Python client generated from the public OpenAPI bundle.

Run by scripts/python-smoke.mjs against a live server, with the generated package on PYTHONPATH
and ARS_BASE_URL, ARS_TOKEN, ARS_RECEIVER_URL and ARS_EXPECTED_QUESTION_SET_IDS (JSON, newest
first) in the environment. Exits non-zero on the first mismatch.
"""
import json
import os
import sys

import audit_review_client as ars
from audit_review_client.rest import ApiException


def check(condition, message):
    if not condition:
        print(f"python-smoke: FAILED: {message}", file=sys.stderr)
        sys.exit(1)


base_url = os.environ["ARS_BASE_URL"]
receiver_url = os.environ["ARS_RECEIVER_URL"]
expected_ids = json.loads(os.environ["ARS_EXPECTED_QUESTION_SET_IDS"])

configuration = ars.Configuration(host=base_url)
configuration.access_token = os.environ["ARS_TOKEN"]

with ars.ApiClient(configuration) as api_client:
    question_sets = ars.QuestionSetsApi(api_client)

    # First page, with the total.
    first = question_sets.list_question_sets(limit=2, include_total="true")
    check(first.object == "list", f"object is {first.object!r}")
    check(first.total_count == len(expected_ids), f"total_count {first.total_count} != {len(expected_ids)}")
    check(len(first.data) == 2 and first.has_more, "the first page of 2 should say has_more")

    # Walk every page with starting_after.
    walked, cursor, pages = [], None, 0
    while True:
        kwargs = {"limit": 2}
        if cursor is not None:
            kwargs["starting_after"] = cursor
        page = question_sets.list_question_sets(**kwargs)
        pages += 1
        walked.extend(item.id for item in page.data)
        if not page.has_more:
            break
        cursor = page.data[-1].id
    check(walked == expected_ids, f"walked ids {walked} != {expected_ids}")
    check(pages == (len(expected_ids) + 1) // 2, f"{pages} pages for {len(expected_ids)} sets")
    check(all(len(s.questions) == 1 for s in first.data), "each set embeds its question")

    # A filter passes through.
    production = question_sets.list_question_sets(is_production="true", limit=100)
    check(all(s.is_production for s in production.data) and production.data, "is_production=true filters")

    # Create a webhook endpoint.
    endpoints = ars.WebhookEndpointsApi(api_client)
    created = endpoints.create_webhook_endpoint(
        ars.CreateWebhookEndpointRequest(
            url=receiver_url,
            description="Python smoke test",
            filters=ars.WebhookEndpointFiltersInput(audit_results="failed"),
            signing=ars.WebhookEndpointSigningInput(legacy_signature=True),
        )
    )
    check(created.url == receiver_url, f"url {created.url!r}")
    check(created.status == "enabled", f"status {created.status!r}")
    check(created.secret.startswith("whsec_"), "the secret is shown once, at creation")
    check(created.filters.audit_results == "failed", "filters.audit_results round-trips")
    check(created.signing.legacy_signature is True, "signing.legacy_signature round-trips")
    check(created.event_types == ["audit.completed"], f"event_types default {created.event_types!r}")

    listed = endpoints.list_webhook_endpoints()
    check([e.id for e in listed.data] == [created.id], "the new endpoint is listed")
    check(listed.data[0].signing.secret_hint.endswith(created.secret[-4:]), "the list shows only a hint")

    # Errors are problem+json with a stable code.
    try:
        endpoints.create_webhook_endpoint(ars.CreateWebhookEndpointRequest(url=receiver_url.replace("https:", "http:")))
        check(False, "an http:// URL must be refused")
    except ApiException as err:
        problem = json.loads(err.body)
        check(err.status == 400 and problem["code"] == "INVALID_WEBHOOK_URL", f"{err.status} {problem.get('code')}")

    print(json.dumps({"created_endpoint_id": created.id, "question_set_pages": pages}))
    print("python-smoke: ok")
