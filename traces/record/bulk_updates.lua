#!/usr/bin/env sysbench
-- Large multi-row transactions among small ones (docs/blame.md, the real-replica check of the
-- split what-if): the sbtest tables of oltp_common; each event is, with probability
-- 1/bulk_every, a bulk `UPDATE sbtestN SET k=k+1 WHERE id BETWEEN a AND a+bulk_rows-1`, else a
-- single-row `UPDATE sbtestN SET k=k+1 WHERE id=?` (both autocommit). With bulk_chunks = C > 1
-- the bulk UPDATE is sent as C autocommit statements over consecutive id ranges, one after the
-- other on the same connection: the same rows, split.

require("oltp_common")

sysbench.cmdline.options.bulk_every = {"one event in this many is a bulk UPDATE", 50}
sysbench.cmdline.options.bulk_rows = {"rows a bulk UPDATE writes", 100}
sysbench.cmdline.options.bulk_chunks = {"autocommit statements a bulk UPDATE is split into", 1}

function prepare_statements()
end

function event()
   local t = sysbench.rand.uniform(1, sysbench.opt.tables)
   if sysbench.rand.uniform(1, sysbench.opt.bulk_every) == 1 then
      local rows = sysbench.opt.bulk_rows
      local first = sysbench.rand.uniform(1, sysbench.opt.table_size - rows + 1)
      local chunks = sysbench.opt.bulk_chunks
      local size = math.ceil(rows / chunks)
      local lo = first
      while lo < first + rows do
         local hi = math.min(lo + size - 1, first + rows - 1)
         con:query(string.format("UPDATE sbtest%d SET k=k+1 WHERE id BETWEEN %d AND %d", t, lo, hi))
         lo = hi + 1
      end
   else
      con:query(string.format("UPDATE sbtest%d SET k=k+1 WHERE id=%d", t,
                              sysbench.rand.default(1, sysbench.opt.table_size)))
   end
end
