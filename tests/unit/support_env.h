/*
 * Settings a test hands to a configuration loader, as the environment
 * would: mb_test_env_use() names a NULL-terminated array of "KEY=value"
 * (borrowed; it must outlive the lookups), mb_test_env_lookup() is the
 * loader's lookup over it (NULL: not set).
 */
#ifndef MB_TEST_SUPPORT_ENV_H
#define MB_TEST_SUPPORT_ENV_H

void		 mb_test_env_use(const char *const *env);
const char	*mb_test_env_lookup(const char *name);

#endif
