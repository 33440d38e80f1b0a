/* The schema migrations, compiled in from migrations/NNNN_name.sql. */
#ifndef MAILBOX_MIGRATIONS_H
#define MAILBOX_MIGRATIONS_H

struct mb_migration {
	int		 version;	/* NNNN */
	const char	*name;		/* "NNNN_name" */
	const char	*sql;		/* the file's text */
};

extern const struct mb_migration	mb_migrations[];	/* sorted by version */
extern const unsigned			mb_migrations_count;

#endif
