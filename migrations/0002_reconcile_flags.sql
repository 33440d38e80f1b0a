-- 0002_reconcile_flags: syncd now reconciles flags of indexed mail from
-- CONDSTORE (docs/syncd.md "Flags and expunges").  A HIGHESTMODSEQ recorded
-- before that vouches for nothing (flag changes up to it were never
-- fetched), so forget it: the first tick after this migration rescans every
-- indexed message's flags once (UID FETCH 1:n (UID FLAGS)), then asks only
-- CHANGEDSINCE the value it records then.
UPDATE folders SET highestmodseq = 0;
