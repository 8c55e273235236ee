-- Every enumerated column holds only the values the contract defines (apps/server/src/lib/stored-values.ts
-- lists them; test/db/enumerated-checks.test.ts compares both with the contract), and auth_config is a
-- JSON object. NULL passes a CHECK, so nullable columns stay nullable. Existing rows are validated.

ALTER TABLE "question_sets"
  ADD CONSTRAINT "question_sets_type_check" CHECK ("type" IN ('clinical_documentation', 'coding', 'compliance', 'quality'));

ALTER TABLE "questions"
  ADD CONSTRAINT "questions_question_type_check" CHECK ("question_type" IN ('yes_no', 'multiple_choice', 'free_text', 'informational')),
  ADD CONSTRAINT "questions_severity_check" CHECK ("severity" IN ('low', 'medium', 'high', 'critical'));

ALTER TABLE "coding_evaluations"
  ADD CONSTRAINT "coding_evaluations_status_check" CHECK ("status" IN ('pending', 'processing', 'completed', 'failed'));

ALTER TABLE "webhook_endpoints"
  ADD CONSTRAINT "webhook_endpoints_status_check" CHECK ("status" IN ('enabled', 'disabled')),
  ADD CONSTRAINT "webhook_endpoints_disabled_reason_check" CHECK ("disabled_reason" IN ('manual', 'gone', 'failing')),
  ADD CONSTRAINT "webhook_endpoints_event_types_check" CHECK ("event_types" <@ ARRAY['audit.completed']::text[]),
  ADD CONSTRAINT "webhook_endpoints_filter_audit_results_check" CHECK ("filter_audit_results" IN ('all', 'passed', 'failed')),
  ADD CONSTRAINT "webhook_endpoints_payload_format_check" CHECK ("payload_format" IN ('standard_v1')),
  ADD CONSTRAINT "webhook_endpoints_payload_fields_check" CHECK ("payload_fields" <@ ARRAY['data.documentId', 'data.result', 'responses', 'responses.query', 'responses.answer', 'responses.context']::text[]),
  ADD CONSTRAINT "webhook_endpoints_payload_result_format_check" CHECK ("payload_result_format" IN ('normalized', 'raw')),
  ADD CONSTRAINT "webhook_endpoints_payload_responses_filter_check" CHECK ("payload_responses_filter" IN ('all', 'failed')),
  ADD CONSTRAINT "webhook_endpoints_auth_type_check" CHECK ("auth_type" IN ('none', 'headers', 'basic', 'oauth2_client_credentials')),
  ADD CONSTRAINT "webhook_endpoints_auth_config_check" CHECK (jsonb_typeof("auth_config") = 'object');

ALTER TABLE "events"
  ADD CONSTRAINT "events_type_check" CHECK ("type" IN ('audit.completed'));

ALTER TABLE "webhook_deliveries"
  ADD CONSTRAINT "webhook_deliveries_event_type_check" CHECK ("event_type" IN ('audit.completed')),
  ADD CONSTRAINT "webhook_deliveries_status_check" CHECK ("status" IN ('pending', 'retrying', 'succeeded', 'failed')),
  ADD CONSTRAINT "webhook_deliveries_last_error_code_check" CHECK ("last_error_code" IN ('connection_error', 'timeout', 'tls_error', 'dns_error', 'destination_blocked', 'unexpected_status', 'auth_error', 'endpoint_disabled', 'endpoint_deleted')),
  ADD CONSTRAINT "webhook_deliveries_next_trigger_check" CHECK ("next_trigger" IN ('scheduled', 'manual', 'test'));

ALTER TABLE "webhook_delivery_attempts"
  ADD CONSTRAINT "webhook_delivery_attempts_trigger_check" CHECK ("trigger" IN ('scheduled', 'manual', 'test')),
  ADD CONSTRAINT "webhook_delivery_attempts_error_code_check" CHECK ("error_code" IN ('connection_error', 'timeout', 'tls_error', 'dns_error', 'destination_blocked', 'unexpected_status', 'auth_error', 'endpoint_disabled', 'endpoint_deleted'));

ALTER TABLE "idempotency_keys"
  ADD CONSTRAINT "idempotency_keys_status_check" CHECK ("status" IN ('in_progress', 'completed'));
