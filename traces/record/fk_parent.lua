#!/usr/bin/env sysbench
-- A foreign-key workload: `parent` (PRIMARY id, UNIQUE name) and `child` (PRIMARY id,
-- FOREIGN KEY parent_id -> parent.id). Each event is one transaction that, at random,
-- inserts or re-points a child row (its key set gains the referenced parent key), updates a
-- parent's non-key column (a write to an FK parent table: `fk_parent`), or renames a parent
-- (its UNIQUE name changes: the UPDATE's before image contributes a key the after image lacks).

sysbench.cmdline.options = {
   parents = {"Number of parent rows", 200},
   children = {"Number of child row ids", 5000},
   tables = {"unused (the recorder passes it to every script)", 1},
   table_size = {"unused (the recorder passes it to every script)", 0},
}

function cmd_prepare()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   con:query([[CREATE TABLE parent (
      id INT NOT NULL PRIMARY KEY,
      name VARCHAR(40) NOT NULL,
      hits INT NOT NULL DEFAULT 0,
      UNIQUE KEY name_uniq (name)) ENGINE=InnoDB]])
   con:query([[CREATE TABLE child (
      id INT NOT NULL PRIMARY KEY,
      parent_id INT NOT NULL,
      v INT NOT NULL,
      KEY parent_idx (parent_id),
      CONSTRAINT child_parent FOREIGN KEY (parent_id) REFERENCES parent (id)) ENGINE=InnoDB]])
   for i = 1, sysbench.opt.parents do
      con:query(string.format("INSERT INTO parent (id, name) VALUES (%d, 'p%d')", i, i))
   end
end

sysbench.cmdline.commands = {
   prepare = {cmd_prepare, sysbench.cmdline.PARALLEL_COMMAND},
}

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
end

function thread_done()
   con:disconnect()
end

local function try(q)
   -- deadlocks and duplicate names are part of the workload: the transaction is rolled back
   local ok = pcall(function() con:query(q) end)
   return ok
end

function event()
   local r = sysbench.rand.uniform(1, 100)
   local p = sysbench.rand.uniform(1, sysbench.opt.parents)
   local c = sysbench.rand.uniform(1, sysbench.opt.children)
   if not try("BEGIN") then return end
   local ok
   if r <= 55 then
      ok = try(string.format("INSERT INTO child (id, parent_id, v) VALUES (%d, %d, 1) " ..
                             "ON DUPLICATE KEY UPDATE parent_id = VALUES(parent_id), v = v + 1", c, p))
   elseif r <= 85 then
      ok = try(string.format("UPDATE parent SET hits = hits + 1 WHERE id = %d", p))
   else
      ok = try(string.format("UPDATE parent SET name = 'p%d_%d' WHERE id = %d", p,
                             sysbench.rand.uniform(1, 1000000), p))
   end
   try(ok and "COMMIT" or "ROLLBACK")
end
