#include <sqlite3.h>

// sqlite3.h defines its extended result codes as expressions ((SQLITE_CONSTRAINT | (8<<8)) ...),
// which Swift does not import; these constants carry the C compiler's values to Swift
// (SQLiteTests pins `SQLiteResultCode` against them).
static const int CSQLITE_BUSY_SNAPSHOT = SQLITE_BUSY_SNAPSHOT;
static const int CSQLITE_CONSTRAINT_CHECK = SQLITE_CONSTRAINT_CHECK;
static const int CSQLITE_CONSTRAINT_FOREIGNKEY = SQLITE_CONSTRAINT_FOREIGNKEY;
static const int CSQLITE_CONSTRAINT_NOTNULL = SQLITE_CONSTRAINT_NOTNULL;
static const int CSQLITE_CONSTRAINT_PRIMARYKEY = SQLITE_CONSTRAINT_PRIMARYKEY;
static const int CSQLITE_CONSTRAINT_UNIQUE = SQLITE_CONSTRAINT_UNIQUE;
