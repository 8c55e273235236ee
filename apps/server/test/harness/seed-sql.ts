// SQL that seeds rows directly, for the tests that need a queue's worth of rows faster than the
// API makes them (query plans, the record batch's isolation).

/** INSERT of enabled audit endpoints of `org` with the given ids (no auth, a placeholder secret). */
export const endpointsSql = (org: string, ids: readonly string[]): string => `
    INSERT INTO webhook_endpoints (id, org_id, url, status, event_types, filter_question_set_ids, filter_audit_results,
                                   payload_format, payload_fields, payload_result_format, payload_responses_filter,
                                   payload_include_informational, auth_type, auth_config, secret_enc, secret_hint, legacy_signature)
      SELECT id, '${org}', 'https://example.com/' || id, 'enabled', ARRAY['audit.completed'], ARRAY[]::uuid[], 'all',
             'standard_v1', ARRAY['responses'], 'normalized', 'all', false, 'none', '{}'::jsonb, '\\x01'::bytea, 'whsec_…abcd', false
        FROM unnest(ARRAY['${ids.join("', '")}']::uuid[]) id;`;
