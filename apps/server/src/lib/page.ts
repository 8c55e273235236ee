/**
 * One page of a list, as the HTTP layer parsed it (Stripe cursor semantics, newest first): at
 * most one of the two cursors is set.
 */
export interface PageRequest {
  limit: number;
  startingAfter?: string | undefined;
  endingBefore?: string | undefined;
  includeTotal: boolean;
}

export interface Page<Row> {
  rows: Row[];
  hasMore: boolean;
  total: number | undefined;
}
