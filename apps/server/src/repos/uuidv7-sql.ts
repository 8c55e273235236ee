/**
 * A UUIDv7 made by PostgreSQL (48-bit millisecond time, version 7, random rest), so fan-out can
 * create its deliveries inside the INSERT … SELECT that finds the matching endpoints. Its time is
 * the delivery's created_at (`at`), so the id names the day partition that holds the row.
 */
export const uuidv7Sql = (at: string) => `encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing
  substring(int8send(floor(extract(epoch from ${at}::timestamptz) * 1000)::bigint) from 3) from 1 for 6), 52, 1), 53, 1), 'hex')::uuid`;
