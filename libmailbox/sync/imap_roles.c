/*
 * Special folders by name, for servers without SPECIAL-USE (Courier, old
 * Cyrus): see mb_imap_roles_by_name() in include/mailbox/imap.h and
 * docs/syncd.md "Roles without SPECIAL-USE".
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "mailbox/imap.h"
#include "mailbox/util.h"

/* Each role's names, best first: the first name present wins the role. */
static const struct {
	const char	*role;
	const char	*names[4];
} by_name[] = {
	{ "\\Drafts", { "Drafts" } },
	{ "\\Trash", { "Trash", "Deleted Items", "Deleted Messages" } },
	{ "\\Sent", { "Sent", "Sent Items", "Sent Messages" } },
	{ "\\Junk", { "Junk", "Spam" } },
	{ "\\Archive", { "Archive" } },
};

static bool
role_taken(const struct mb_imap_folder *v, size_t n, const char *role)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].role != NULL && strcasecmp(v[i].role, role) == 0)
			return true;
	return false;
}

/* The folder named prefix + name (case-insensitive), without a role; or NULL. */
static struct mb_imap_folder *
named(struct mb_imap_folder *v, size_t n, const char *prefix, const char *name)
{
	size_t plen = strlen(prefix);

	for (size_t i = 0; i < n; i++) {
		if (!v[i].selectable || v[i].role != NULL || v[i].name == NULL)
			continue;
		/* The prefix is the server's own spelling ("INBOX." on Courier),
		 * but INBOX is case-insensitive everywhere: compare it so. */
		if (strncasecmp(v[i].name, prefix, plen) == 0 &&
		    strcasecmp(v[i].name + plen, name) == 0)
			return &v[i];
	}
	return NULL;
}

void
mb_imap_roles_by_name(struct mb_imap_folder *folders, size_t n, const char *prefix)
{
	if (prefix == NULL)
		prefix = "";
	for (size_t r = 0; r < MB_ARRAY_LEN(by_name); r++) {
		if (role_taken(folders, n, by_name[r].role))
			continue;
		for (size_t k = 0; k < MB_ARRAY_LEN(by_name[r].names) &&
		    by_name[r].names[k] != NULL; k++) {
			struct mb_imap_folder *f = named(folders, n, prefix, by_name[r].names[k]);

			if (f != NULL) {
				f->role = mb_xstrdup(by_name[r].role);
				f->role_by_name = true;
				break;
			}
		}
	}
}
