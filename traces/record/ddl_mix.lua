#!/usr/bin/env sysbench
-- oltp_update_index with DDL in the middle: thread 0 runs one DDL statement every
-- --ddl-every of its events, cycling through CREATE TABLE / ALTER TABLE ADD UNIQUE /
-- ALTER TABLE DROP INDEX / DROP TABLE on a side table that the other threads also write.
-- The importer must follow each DDL to key the side table's rows (its UNIQUE key comes and goes).
require("oltp_common")

sysbench.cmdline.options.ddl_every =
   {"thread 0 runs a DDL statement every N of its events", 100}

local ddl_cycle = {
   "CREATE TABLE IF NOT EXISTS side (id INT NOT NULL PRIMARY KEY, u INT, v INT)",
   "ALTER TABLE side ADD UNIQUE KEY u_uniq (u)",
   "ALTER TABLE side DROP INDEX u_uniq",
   "DROP TABLE IF EXISTS side",
}

function prepare_statements()
   prepare_index_updates()
end

local n_events, n_ddl = 0, 0

function event()
   n_events = n_events + 1
   if sysbench.tid == 0 and n_events % sysbench.opt.ddl_every == 0 then
      con:query(ddl_cycle[n_ddl % #ddl_cycle + 1])
      n_ddl = n_ddl + 1
      return
   end
   execute_index_updates(con)
   -- write the side table when it exists (errors while it is dropped are expected)
   local id = sysbench.rand.uniform(1, 1000)
   pcall(function()
      con:query(string.format(
         "INSERT INTO side (id, u, v) VALUES (%d, %d, 1) ON DUPLICATE KEY UPDATE v = v + 1",
         id, id))
   end)
end
