-- 0009_role_source: where a folder's role came from.
--
-- 'special-use' when the server's LIST gave it (RFC 6154), 'name' when
-- syncd found it by the folder's name inside the personal namespace on a
-- server without SPECIAL-USE (docs/syncd.md "Roles without SPECIAL-USE");
-- NULL when the folder has no role.  Roles indexed before this came from
-- SPECIAL-USE only.
ALTER TABLE folders ADD COLUMN role_source TEXT
	CHECK (role_source IS NULL OR role_source IN ('special-use', 'name'));
UPDATE folders SET role_source = 'special-use' WHERE role IS NOT NULL;
