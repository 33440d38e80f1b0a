/* A fake environment for configuration loaders (support_env.h). */
#include <stddef.h>
#include <string.h>

#include "support_env.h"

static const char *const *fake_env;

void
mb_test_env_use(const char *const *env)
{
	fake_env = env;
}

const char *
mb_test_env_lookup(const char *name)
{
	size_t n = strlen(name);

	for (const char *const *e = fake_env; e != NULL && *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}
