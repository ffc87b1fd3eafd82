-- Ordering by a column group (issue 39: `ordering: {by: ["account_id"]}`): the changes whose
-- group values are equal are delivered one at a time, in commit order, as `row` does for one
-- primary-key value. Stored as `ordering = 'group'` and the columns in `ordering_by`, in the
-- order given (the view returns them as sent). The delivery plane needs nothing new: the tailer
-- computes the deliveries' order keys from the group's values instead of the primary key
-- (src/tailer/order-keys.ts), and the retry queue's claim and onDead "hold" work on keys alone.
ALTER TABLE walgate.webhooks ADD COLUMN ordering_by text[];
ALTER TABLE walgate.webhooks DROP CONSTRAINT webhooks_ordering_check;
ALTER TABLE walgate.webhooks ADD CONSTRAINT webhooks_ordering_check CHECK (
  (ordering IN ('none', 'row') AND ordering_by IS NULL)
  OR (ordering = 'group' AND ordering_by IS NOT NULL AND cardinality(ordering_by) BETWEEN 1 AND 8 AND array_position(ordering_by, NULL) IS NULL));
