/* SPDX-License-Identifier: MIT */
#ifndef FABMON_SCHEMA_H
#define FABMON_SCHEMA_H

/* The numbered migrations from schema/NNN_name.sql, oldest first (schema/embed.sh). */
struct schema_migration {
	unsigned version; /* PRAGMA user_version after this migration */
	const char *file;
	const char *sql;
};

extern const struct schema_migration schema_migrations[];
extern const unsigned schema_migration_count;

#endif
