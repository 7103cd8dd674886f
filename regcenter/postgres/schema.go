package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SchemaVersion is the version of the tables and functions this code
// reads and writes. Open creates them, or migrates older ones, under an
// advisory lock, and refuses a database whose schema is newer.
const SchemaVersion = 6

// schemaLock is the advisory lock key under which the schema is created
// or migrated: hashtext('shardjob.regcenter.schema'), fixed here so that
// every version of the code takes the same one.
const schemaLock int64 = 0x73686a7263736368 // "shjrcsch"

// notifyChannel is the LISTEN/NOTIFY channel every write notifies, with
// its namespace as the payload.
const notifyChannel = "shardjob_rc"

// migrations[i] brings the schema from version i to i+1. Each runs in the
// transaction that holds the lock and records the new version.
var migrations = []string{
	// 0 -> 1: nodes, namespaces (their revision counters), sessions, the
	// change log and the functions that write them.
	`
CREATE TABLE shardjob_rc_meta (
	id      int PRIMARY KEY CHECK (id = 1),
	version int NOT NULL
);
INSERT INTO shardjob_rc_meta (id, version) VALUES (1, 0);

-- One row per namespace. rev is the namespace's revision: every write
-- takes it (and so its row lock) and adds one, so writes in a namespace
-- commit in revision order and a reader that has seen revision r has
-- seen every revision before it. pruned: the change log holds nothing at
-- or below it.
CREATE TABLE shardjob_rc_ns (
	ns     text PRIMARY KEY,
	rev    bigint NOT NULL DEFAULT 0,
	pruned bigint NOT NULL DEFAULT 0
);

CREATE TABLE shardjob_rc_nodes (
	ns          text NOT NULL,
	path        text NOT NULL,
	parent      text NOT NULL,
	name        text NOT NULL,
	data        bytea NOT NULL DEFAULT '',
	version     int NOT NULL DEFAULT 0,
	cversion    int NOT NULL DEFAULT 0,
	numchildren int NOT NULL DEFAULT 0,
	owner       bigint NOT NULL DEFAULT 0,
	czxid       bigint NOT NULL,
	mzxid       bigint NOT NULL,
	ctime       timestamptz NOT NULL,
	mtime       timestamptz NOT NULL,
	PRIMARY KEY (ns, path)
);
CREATE INDEX shardjob_rc_nodes_parent ON shardjob_rc_nodes (ns, parent);
CREATE INDEX shardjob_rc_nodes_owner ON shardjob_rc_nodes (owner) WHERE owner <> 0;

-- A session's lease is kept by the server's clock: expires is now() + ttl
-- at the latest heartbeat.
CREATE TABLE shardjob_rc_sessions (
	id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	-- token is the holder's random number: with the id it names the
	-- session, so that an id issued again (a failover that lost the
	-- sequence's advance) is never mistaken for the holder's.
	token   bigint NOT NULL,
	ns      text NOT NULL,
	ttl     interval NOT NULL,
	expires timestamptz NOT NULL,
	created timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX shardjob_rc_sessions_expires ON shardjob_rc_sessions (ns, expires);

-- The change log: kind 1 created, 2 deleted, 3 data set. i orders the
-- changes of one revision (a transaction).
CREATE TABLE shardjob_rc_log (
	ns   text NOT NULL,
	rev  bigint NOT NULL,
	i    int NOT NULL,
	path text NOT NULL,
	kind smallint NOT NULL,
	PRIMARY KEY (ns, rev, i)
);

CREATE FUNCTION shardjob_rc_parent(p text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN p = '/' THEN '' WHEN p ~ '^/[^/]*$' THEN '/' ELSE regexp_replace(p, '/[^/]*$', '') END
$$;

CREATE FUNCTION shardjob_rc_fail(what text, idx int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'shardjob:' || what || ':' || idx;
END
$$;

-- shardjob_rc_write applies ops in order as one transaction: kind 1
-- create (mode 0 persistent, 1 ephemeral, 2 ephemeral sequential, 3
-- persistent sequential), 2 set, 3 delete, 4 check; versions -1 match
-- any. A failing op raises 'shardjob:<why>:<op index from 0>', which
-- undoes the whole statement. mkparents creates a create's missing
-- parents. It returns the paths written (a sequential create's with its
-- suffix) and the stat of the last op's node.
CREATE FUNCTION shardjob_rc_write(p_ns text, p_sess bigint, p_token bigint, p_mkparents boolean,
	p_kinds smallint[], p_paths text[], p_data bytea[], p_vers int[], p_modes smallint[],
	OUT o_paths text[], OUT o_found boolean, OUT o_version int, OUT o_cversion int, OUT o_owner bigint,
	OUT o_czxid bigint, OUT o_mzxid bigint, OUT o_ctime timestamptz, OUT o_mtime timestamptz,
	OUT o_numchildren int, OUT o_datalen int)
LANGUAGE plpgsql AS $$
DECLARE
	r bigint;
	n int := coalesce(array_length(p_kinds, 1), 0);
	k smallint;
	p text;
	par text;
	nm text;
	anc text;
	ancs text[];
	node shardjob_rc_nodes%ROWTYPE;
	pcv int;
	own bigint;
	li int := 0;
BEGIN
	UPDATE shardjob_rc_ns SET rev = rev + 1 WHERE ns = p_ns RETURNING rev INTO r;
	IF NOT FOUND THEN
		PERFORM shardjob_rc_fail('nons', 0);
	END IF;
	o_paths := '{}';
	FOR idx IN 1..n LOOP
		k := p_kinds[idx];
		p := p_paths[idx];
		par := shardjob_rc_parent(p);
		IF k = 1 THEN
			IF p = '/' THEN
				PERFORM shardjob_rc_fail('exists', idx - 1);
			END IF;
			SELECT cversion, owner INTO pcv, own FROM shardjob_rc_nodes WHERE ns = p_ns AND path = par;
			IF NOT FOUND THEN
				IF NOT p_mkparents THEN
					PERFORM shardjob_rc_fail('nonode', idx - 1);
				END IF;
				ancs := '{}';
				anc := par;
				WHILE anc <> '' LOOP
					ancs := anc || ancs;
					anc := shardjob_rc_parent(anc);
				END LOOP;
				FOREACH anc IN ARRAY ancs LOOP
					INSERT INTO shardjob_rc_nodes (ns, path, parent, name, czxid, mzxid, ctime, mtime)
					VALUES (p_ns, anc, shardjob_rc_parent(anc), regexp_replace(anc, '^.*/', ''), r, r, now(), now())
					ON CONFLICT DO NOTHING;
					IF FOUND AND anc <> '/' THEN
						UPDATE shardjob_rc_nodes SET cversion = cversion + 1, numchildren = numchildren + 1
						WHERE ns = p_ns AND path = shardjob_rc_parent(anc) RETURNING owner INTO own;
						IF own <> 0 THEN
							PERFORM shardjob_rc_fail('ephemeralparent', idx - 1);
						END IF;
						li := li + 1;
						INSERT INTO shardjob_rc_log VALUES (p_ns, r, li, anc, 1);
					END IF;
				END LOOP;
				SELECT cversion, owner INTO pcv, own FROM shardjob_rc_nodes WHERE ns = p_ns AND path = par;
			END IF;
			IF own <> 0 THEN
				-- As ZooKeeper: an ephemeral node has no children.
				PERFORM shardjob_rc_fail('ephemeralparent', idx - 1);
			END IF;
			own := 0;
			IF p_modes[idx] IN (1, 2) THEN
				PERFORM 1 FROM shardjob_rc_sessions WHERE id = p_sess AND token = p_token AND ns = p_ns AND expires > now() FOR KEY SHARE;
				IF NOT FOUND THEN
					PERFORM shardjob_rc_fail('session', idx - 1);
				END IF;
				own := p_sess;
			END IF;
			IF p_modes[idx] IN (2, 3) THEN
				p := p || lpad(pcv::text, 10, '0');
			END IF;
			INSERT INTO shardjob_rc_nodes (ns, path, parent, name, data, owner, czxid, mzxid, ctime, mtime)
			VALUES (p_ns, p, par, regexp_replace(p, '^.*/', ''), coalesce(p_data[idx], ''), own, r, r, now(), now())
			ON CONFLICT DO NOTHING;
			IF NOT FOUND THEN
				PERFORM shardjob_rc_fail('exists', idx - 1);
			END IF;
			UPDATE shardjob_rc_nodes SET cversion = cversion + 1, numchildren = numchildren + 1
			WHERE ns = p_ns AND path = par;
			li := li + 1;
			INSERT INTO shardjob_rc_log VALUES (p_ns, r, li, p, 1);
		ELSIF k = 2 THEN
			UPDATE shardjob_rc_nodes SET data = coalesce(p_data[idx], ''), version = version + 1, mzxid = r, mtime = greatest(now(), mtime)
			WHERE ns = p_ns AND path = p AND (p_vers[idx] = -1 OR version = p_vers[idx]);
			IF NOT FOUND THEN
				PERFORM 1 FROM shardjob_rc_nodes WHERE ns = p_ns AND path = p;
				IF FOUND THEN
					PERFORM shardjob_rc_fail('badversion', idx - 1);
				END IF;
				PERFORM shardjob_rc_fail('nonode', idx - 1);
			END IF;
			li := li + 1;
			INSERT INTO shardjob_rc_log VALUES (p_ns, r, li, p, 3);
		ELSIF k = 3 THEN
			SELECT * INTO node FROM shardjob_rc_nodes WHERE ns = p_ns AND path = p;
			IF NOT FOUND THEN
				PERFORM shardjob_rc_fail('nonode', idx - 1);
			END IF;
			IF p_vers[idx] <> -1 AND node.version <> p_vers[idx] THEN
				PERFORM shardjob_rc_fail('badversion', idx - 1);
			END IF;
			IF node.numchildren > 0 THEN
				PERFORM shardjob_rc_fail('notempty', idx - 1);
			END IF;
			DELETE FROM shardjob_rc_nodes WHERE ns = p_ns AND path = p;
			UPDATE shardjob_rc_nodes SET cversion = cversion + 1, numchildren = numchildren - 1
			WHERE ns = p_ns AND path = par;
			li := li + 1;
			INSERT INTO shardjob_rc_log VALUES (p_ns, r, li, p, 2);
		ELSIF k = 4 THEN
			SELECT * INTO node FROM shardjob_rc_nodes WHERE ns = p_ns AND path = p;
			IF NOT FOUND THEN
				PERFORM shardjob_rc_fail('nonode', idx - 1);
			END IF;
			IF p_vers[idx] <> -1 AND node.version <> p_vers[idx] THEN
				PERFORM shardjob_rc_fail('badversion', idx - 1);
			END IF;
		END IF;
		o_paths := o_paths || p;
	END LOOP;
	IF li > 0 THEN
		PERFORM pg_notify('` + notifyChannel + `', p_ns);
	END IF;
	o_found := false;
	IF n > 0 THEN
		SELECT true, version, cversion, owner, czxid, mzxid, ctime, mtime, numchildren, length(data)
		INTO o_found, o_version, o_cversion, o_owner, o_czxid, o_mzxid, o_ctime, o_mtime, o_numchildren, o_datalen
		FROM shardjob_rc_nodes WHERE ns = p_ns AND path = p;
		o_found := coalesce(o_found, false);
	END IF;
END
$$;

-- shardjob_rc_reap ends, in namespace p_ns, the sessions whose lease ran
-- out (by the server's clock) and the session p_close with p_token (0:
-- none), deleting
-- their ephemeral nodes in the same transaction. Any live client may call
-- it; a second call finds nothing left to do. It takes the namespace's
-- row before the sessions', as writers do.
CREATE FUNCTION shardjob_rc_reap(p_ns text, p_close bigint, p_token bigint) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	r bigint;
	ids bigint[];
	d record;
	li int := 0;
BEGIN
	PERFORM 1 FROM shardjob_rc_sessions WHERE ns = p_ns AND (expires <= now() OR (id = p_close AND token = p_token)) LIMIT 1;
	IF NOT FOUND THEN
		RETURN 0;
	END IF;
	UPDATE shardjob_rc_ns SET rev = rev + 1 WHERE ns = p_ns RETURNING rev INTO r;
	IF NOT FOUND THEN
		RETURN 0;
	END IF;
	WITH gone AS (
		DELETE FROM shardjob_rc_sessions WHERE ns = p_ns AND (expires <= now() OR (id = p_close AND token = p_token)) RETURNING id
	) SELECT array_agg(id) INTO ids FROM gone;
	IF ids IS NULL THEN
		RETURN 0;
	END IF;
	-- Deepest first, so that a parent counts a child that goes with it.
	FOR d IN SELECT path, parent FROM shardjob_rc_nodes WHERE ns = p_ns AND owner = ANY (ids)
		ORDER BY length(path) - length(replace(path, '/', '')) DESC, path
	LOOP
		DELETE FROM shardjob_rc_nodes WHERE ns = p_ns AND path = d.path;
		UPDATE shardjob_rc_nodes SET cversion = cversion + 1, numchildren = numchildren - 1
		WHERE ns = p_ns AND path = d.parent;
		li := li + 1;
		INSERT INTO shardjob_rc_log VALUES (p_ns, r, li, d.path, 2);
	END LOOP;
	IF li > 0 THEN
		PERFORM pg_notify('` + notifyChannel + `', p_ns);
	END IF;
	RETURN coalesce(array_length(ids, 1), 0);
END
$$;

-- shardjob_rc_prune drops the change log of p_ns below its newest p_keep
-- revisions, at most p_max revisions a call, and records where it cut.
CREATE FUNCTION shardjob_rc_prune(p_ns text, p_keep bigint, p_max bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	cut bigint;
BEGIN
	UPDATE shardjob_rc_ns SET pruned = least(rev - p_keep, pruned + p_max)
	WHERE ns = p_ns AND rev - p_keep > pruned RETURNING pruned INTO cut;
	IF NOT FOUND THEN
		RETURN 0;
	END IF;
	DELETE FROM shardjob_rc_log WHERE ns = p_ns AND rev <= cut;
	RETURN cut;
END
$$;
`,
	// 1 -> 2: the reaper's first look, which every heartbeat of every
	// instance makes, finds a lapsed session through the (ns, expires)
	// index alone. Its condition had an OR for the session a Close ends,
	// which made it read every session of the namespace: at 1,000
	// instances, 320 µs of the server's CPU a heartbeat instead of ~50.
	`
CREATE OR REPLACE FUNCTION shardjob_rc_reap(p_ns text, p_close bigint, p_token bigint) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	r bigint;
	ids bigint[];
	d record;
	li int := 0;
BEGIN
	PERFORM 1 FROM shardjob_rc_sessions WHERE ns = p_ns AND expires <= now() LIMIT 1;
	IF NOT FOUND THEN
		IF p_close = 0 THEN
			RETURN 0;
		END IF;
		PERFORM 1 FROM shardjob_rc_sessions WHERE id = p_close AND token = p_token AND ns = p_ns;
		IF NOT FOUND THEN
			RETURN 0;
		END IF;
	END IF;
	UPDATE shardjob_rc_ns SET rev = rev + 1 WHERE ns = p_ns RETURNING rev INTO r;
	IF NOT FOUND THEN
		RETURN 0;
	END IF;
	WITH gone AS (
		DELETE FROM shardjob_rc_sessions WHERE ns = p_ns AND (expires <= now() OR (id = p_close AND token = p_token)) RETURNING id
	) SELECT array_agg(id) INTO ids FROM gone;
	IF ids IS NULL THEN
		RETURN 0;
	END IF;
	-- Deepest first, so that a parent counts a child that goes with it.
	FOR d IN SELECT path, parent FROM shardjob_rc_nodes WHERE ns = p_ns AND owner = ANY (ids)
		ORDER BY length(path) - length(replace(path, '/', '')) DESC, path
	LOOP
		DELETE FROM shardjob_rc_nodes WHERE ns = p_ns AND path = d.path;
		UPDATE shardjob_rc_nodes SET cversion = cversion + 1, numchildren = numchildren - 1
		WHERE ns = p_ns AND path = d.parent;
		li := li + 1;
		INSERT INTO shardjob_rc_log VALUES (p_ns, r, li, d.path, 2);
	END LOOP;
	IF li > 0 THEN
		PERFORM pg_notify('` + notifyChannel + `', p_ns);
	END IF;
	RETURN coalesce(array_length(ids, 1), 0);
END
$$;
`,
	// 2 -> 3: a write applied late — a statement the client gave up on
	// (its answer out of time) that the server runs after all, behind a
	// lock or a slow network — must not act on a node made after it was
	// sent: a late delete of a running mark would remove the mark another
	// run holds. shardjob_rc_write_seen takes the highest revision the
	// client had seen when it sent the write and fails ('unseen', with the
	// namespace's revision, for the client to catch up and send again)
	// when a set, delete or check names a node created after it. It
	// returns the write's revision. shardjob_rc_write stays, for programs
	// of version 2 still running.
	`
CREATE FUNCTION shardjob_rc_write_seen(p_ns text, p_seen bigint, p_sess bigint, p_token bigint, p_mkparents boolean,
	p_kinds smallint[], p_paths text[], p_data bytea[], p_vers int[], p_modes smallint[],
	OUT o_rev bigint, OUT o_paths text[], OUT o_found boolean, OUT o_version int, OUT o_cversion int, OUT o_owner bigint,
	OUT o_czxid bigint, OUT o_mzxid bigint, OUT o_ctime timestamptz, OUT o_mtime timestamptz,
	OUT o_numchildren int, OUT o_datalen int)
LANGUAGE plpgsql AS $$
DECLARE
	cur bigint;
	bad bigint;
BEGIN
	-- The namespace's row lock first: what is checked here is what the
	-- write below finds.
	SELECT rev INTO cur FROM shardjob_rc_ns WHERE ns = p_ns FOR UPDATE;
	IF FOUND THEN
		SELECT min(o.i) INTO bad
		FROM unnest(p_kinds, p_paths) WITH ORDINALITY AS o(k, p, i)
		JOIN shardjob_rc_nodes n ON n.ns = p_ns AND n.path = o.p
		WHERE o.k IN (2, 3, 4) AND n.czxid > p_seen;
		IF bad IS NOT NULL THEN
			RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'shardjob:unseen:' || (bad - 1) || ':' || cur;
		END IF;
	END IF;
	SELECT w.o_paths, w.o_found, w.o_version, w.o_cversion, w.o_owner, w.o_czxid, w.o_mzxid, w.o_ctime, w.o_mtime,
		w.o_numchildren, w.o_datalen
	INTO o_paths, o_found, o_version, o_cversion, o_owner, o_czxid, o_mzxid, o_ctime, o_mtime, o_numchildren, o_datalen
	FROM shardjob_rc_write(p_ns, p_sess, p_token, p_mkparents, p_kinds, p_paths, p_data, p_vers, p_modes) w;
	o_rev := cur + 1;
END
$$;
`,
	// 3 -> 4: no index of the nodes leads with ns: the primary key is
	// (path, ns) and the parent index (parent, ns). ANALYZE lists every
	// namespace it met as a most common value, so a namespace made since
	// then has, by the statistics, one row, and a namespace never analyzed
	// a 200th of the table: with ns leading both indexes, the planner took
	// a scan of the whole namespace by that prefix for cheap — to look a
	// node up by (ns, path), and to read or check a batch of nodes (3 to 7
	// ms a statement at 20,000 nodes instead of 0.03 ms; registering
	// 10,000 jobs took 8 s instead of 3 once autovacuum had analyzed
	// tables that other namespaces had filled). With the path or the
	// parent first, a node is found by its path whatever ns's statistics
	// say, and a batch is either looked up node by node or joined to a
	// scan of the table, whose size the planner knows. The indexes are
	// built again here, under the migration's lock.
	`
ALTER TABLE shardjob_rc_nodes DROP CONSTRAINT shardjob_rc_nodes_pkey,
	ADD CONSTRAINT shardjob_rc_nodes_pkey PRIMARY KEY (path, ns);
DROP INDEX shardjob_rc_nodes_parent;
CREATE INDEX shardjob_rc_nodes_parent ON shardjob_rc_nodes (parent, ns);
`,
	// 4 -> 5: write_seen checks the nodes a write names one by one, each
	// looked up by the primary key, instead of joining the write's paths
	// to the nodes. A session's sixth run of a function's statement may
	// keep a plan made for any values (a generic plan), planned for the
	// table's size then, and nothing plans it again until the table is
	// analyzed: on a fresh database the session's first writes came while
	// the table had a few pages, and the join's plan was a scan of the
	// whole table, which every later write of that session then made under
	// the namespace's row lock (firebench -register: 10,000 jobs' leaves
	// scanned 80,000 rows each and took 10 s, most past their deadline).
	// A lookup of one node by its whole primary key is an index scan
	// whatever the table's size was. The check's meaning is unchanged: the
	// first set, delete or check, in the write's order, of a node created
	// after p_seen fails the write.
	`
CREATE OR REPLACE FUNCTION shardjob_rc_write_seen(p_ns text, p_seen bigint, p_sess bigint, p_token bigint, p_mkparents boolean,
	p_kinds smallint[], p_paths text[], p_data bytea[], p_vers int[], p_modes smallint[],
	OUT o_rev bigint, OUT o_paths text[], OUT o_found boolean, OUT o_version int, OUT o_cversion int, OUT o_owner bigint,
	OUT o_czxid bigint, OUT o_mzxid bigint, OUT o_ctime timestamptz, OUT o_mtime timestamptz,
	OUT o_numchildren int, OUT o_datalen int)
LANGUAGE plpgsql AS $$
DECLARE
	cur bigint;
BEGIN
	-- The namespace's row lock first: what is checked here is what the
	-- write below finds.
	SELECT rev INTO cur FROM shardjob_rc_ns WHERE ns = p_ns FOR UPDATE;
	IF FOUND THEN
		FOR idx IN 1..coalesce(array_length(p_kinds, 1), 0) LOOP
			IF p_kinds[idx] IN (2, 3, 4) THEN
				PERFORM 1 FROM shardjob_rc_nodes WHERE path = p_paths[idx] AND ns = p_ns AND czxid > p_seen;
				IF FOUND THEN
					RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'shardjob:unseen:' || (idx - 1) || ':' || cur;
				END IF;
			END IF;
		END LOOP;
	END IF;
	SELECT w.o_paths, w.o_found, w.o_version, w.o_cversion, w.o_owner, w.o_czxid, w.o_mzxid, w.o_ctime, w.o_mtime,
		w.o_numchildren, w.o_datalen
	INTO o_paths, o_found, o_version, o_cversion, o_owner, o_czxid, o_mzxid, o_ctime, o_mtime, o_numchildren, o_datalen
	FROM shardjob_rc_write(p_ns, p_sess, p_token, p_mkparents, p_kinds, p_paths, p_data, p_vers, p_modes) w;
	o_rev := cur + 1;
END
$$;
`,
	// 5 -> 6: shardjob_rc_write spends fewer statements a node, for the
	// server's CPU is what registering many jobs waits for (10,000 jobs'
	// trees, 80,000 creates: 3.6–3.9 s of the server's CPU, 31 µs a node:
	// four statements and two regular expressions each). A persistent
	// create is one statement, its parent's update feeding the insert;
	// any other create counts itself in its parent with one update that
	// returns what the parent's read gave (its cversion before, its
	// owner); a delete returns the node's version and children from the
	// delete itself; the parent and the name are cut at the last slash;
	// and the change log is written once a write, from arrays, instead of
	// a row at a time. Any failure still raises and undoes the whole
	// statement, so doing the parent's update before the checks that may
	// fail changes no outcome: what is written, in which order, and which
	// op a failure names, are unchanged.
	`
CREATE OR REPLACE FUNCTION shardjob_rc_write(p_ns text, p_sess bigint, p_token bigint, p_mkparents boolean,
	p_kinds smallint[], p_paths text[], p_data bytea[], p_vers int[], p_modes smallint[],
	OUT o_paths text[], OUT o_found boolean, OUT o_version int, OUT o_cversion int, OUT o_owner bigint,
	OUT o_czxid bigint, OUT o_mzxid bigint, OUT o_ctime timestamptz, OUT o_mtime timestamptz,
	OUT o_numchildren int, OUT o_datalen int)
LANGUAGE plpgsql AS $$
DECLARE
	r bigint;
	n int := coalesce(array_length(p_kinds, 1), 0);
	k smallint;
	p text;
	par text;
	anc text;
	ancs text[];
	pcv int;
	own bigint;
	v int;
	nc int;
	slash int;
	lpaths text[] := '{}';
	lkinds smallint[] := '{}';
BEGIN
	UPDATE shardjob_rc_ns SET rev = rev + 1 WHERE ns = p_ns RETURNING rev INTO r;
	IF NOT FOUND THEN
		PERFORM shardjob_rc_fail('nons', 0);
	END IF;
	o_paths := '{}';
	FOR idx IN 1..n LOOP
		k := p_kinds[idx];
		p := p_paths[idx];
		-- The parent's path and the node's name by the last slash (as
		-- shardjob_rc_parent's, without its regular expressions).
		slash := length(p) - strpos(reverse(p), '/');
		par := CASE WHEN p = '/' THEN '' WHEN slash = 0 THEN '/' ELSE left(p, slash) END;
		IF k = 1 AND p_modes[idx] = 0 AND p <> '/' THEN
			-- A persistent node, the most common create, in one statement:
			-- its parent, there and not ephemeral, counts it as it goes in.
			WITH u AS (
				UPDATE shardjob_rc_nodes SET cversion = cversion + 1, numchildren = numchildren + 1
				WHERE path = par AND ns = p_ns AND owner = 0 RETURNING 1
			)
			INSERT INTO shardjob_rc_nodes (ns, path, parent, name, data, owner, czxid, mzxid, ctime, mtime)
			SELECT p_ns, p, par, substr(p, slash + 2), coalesce(p_data[idx], ''), 0, r, r, now(), now() FROM u
			ON CONFLICT DO NOTHING;
			IF FOUND THEN
				lpaths := lpaths || p;
				lkinds := lkinds || 1::smallint;
				o_paths := o_paths || p;
				CONTINUE;
			END IF;
			-- Why not, in the order the general create below checks: an
			-- ephemeral parent, then the node there already. A missing
			-- parent goes on below, which makes it or fails.
			SELECT owner INTO own FROM shardjob_rc_nodes WHERE path = par AND ns = p_ns;
			IF FOUND THEN
				IF own <> 0 THEN
					PERFORM shardjob_rc_fail('ephemeralparent', idx - 1);
				END IF;
				PERFORM shardjob_rc_fail('exists', idx - 1);
			END IF;
		END IF;
		IF k = 1 THEN
			IF p = '/' THEN
				PERFORM shardjob_rc_fail('exists', idx - 1);
			END IF;
			UPDATE shardjob_rc_nodes SET cversion = cversion + 1, numchildren = numchildren + 1
			WHERE path = par AND ns = p_ns RETURNING cversion - 1, owner INTO pcv, own;
			IF NOT FOUND THEN
				IF NOT p_mkparents THEN
					PERFORM shardjob_rc_fail('nonode', idx - 1);
				END IF;
				ancs := '{}';
				anc := par;
				WHILE anc <> '' LOOP
					ancs := anc || ancs;
					anc := shardjob_rc_parent(anc);
				END LOOP;
				FOREACH anc IN ARRAY ancs LOOP
					INSERT INTO shardjob_rc_nodes (ns, path, parent, name, czxid, mzxid, ctime, mtime)
					VALUES (p_ns, anc, shardjob_rc_parent(anc), regexp_replace(anc, '^.*/', ''), r, r, now(), now())
					ON CONFLICT DO NOTHING;
					IF FOUND AND anc <> '/' THEN
						UPDATE shardjob_rc_nodes SET cversion = cversion + 1, numchildren = numchildren + 1
						WHERE path = shardjob_rc_parent(anc) AND ns = p_ns RETURNING owner INTO own;
						IF own <> 0 THEN
							PERFORM shardjob_rc_fail('ephemeralparent', idx - 1);
						END IF;
						lpaths := lpaths || anc;
						lkinds := lkinds || 1::smallint;
					END IF;
				END LOOP;
				UPDATE shardjob_rc_nodes SET cversion = cversion + 1, numchildren = numchildren + 1
				WHERE path = par AND ns = p_ns RETURNING cversion - 1, owner INTO pcv, own;
			END IF;
			IF own <> 0 THEN
				-- As ZooKeeper: an ephemeral node has no children.
				PERFORM shardjob_rc_fail('ephemeralparent', idx - 1);
			END IF;
			own := 0;
			IF p_modes[idx] IN (1, 2) THEN
				PERFORM 1 FROM shardjob_rc_sessions WHERE id = p_sess AND token = p_token AND ns = p_ns AND expires > now() FOR KEY SHARE;
				IF NOT FOUND THEN
					PERFORM shardjob_rc_fail('session', idx - 1);
				END IF;
				own := p_sess;
			END IF;
			IF p_modes[idx] IN (2, 3) THEN
				p := p || lpad(pcv::text, 10, '0');
			END IF;
			INSERT INTO shardjob_rc_nodes (ns, path, parent, name, data, owner, czxid, mzxid, ctime, mtime)
			VALUES (p_ns, p, par, substr(p, slash + 2), coalesce(p_data[idx], ''), own, r, r, now(), now())
			ON CONFLICT DO NOTHING;
			IF NOT FOUND THEN
				PERFORM shardjob_rc_fail('exists', idx - 1);
			END IF;
			lpaths := lpaths || p;
			lkinds := lkinds || 1::smallint;
		ELSIF k = 2 THEN
			UPDATE shardjob_rc_nodes SET data = coalesce(p_data[idx], ''), version = version + 1, mzxid = r, mtime = greatest(now(), mtime)
			WHERE path = p AND ns = p_ns AND (p_vers[idx] = -1 OR version = p_vers[idx]);
			IF NOT FOUND THEN
				PERFORM 1 FROM shardjob_rc_nodes WHERE path = p AND ns = p_ns;
				IF FOUND THEN
					PERFORM shardjob_rc_fail('badversion', idx - 1);
				END IF;
				PERFORM shardjob_rc_fail('nonode', idx - 1);
			END IF;
			lpaths := lpaths || p;
			lkinds := lkinds || 3::smallint;
		ELSIF k = 3 THEN
			DELETE FROM shardjob_rc_nodes WHERE path = p AND ns = p_ns RETURNING version, numchildren INTO v, nc;
			IF NOT FOUND THEN
				PERFORM shardjob_rc_fail('nonode', idx - 1);
			END IF;
			IF p_vers[idx] <> -1 AND v <> p_vers[idx] THEN
				PERFORM shardjob_rc_fail('badversion', idx - 1);
			END IF;
			IF nc > 0 THEN
				PERFORM shardjob_rc_fail('notempty', idx - 1);
			END IF;
			UPDATE shardjob_rc_nodes SET cversion = cversion + 1, numchildren = numchildren - 1
			WHERE path = par AND ns = p_ns;
			lpaths := lpaths || p;
			lkinds := lkinds || 2::smallint;
		ELSIF k = 4 THEN
			SELECT version INTO v FROM shardjob_rc_nodes WHERE path = p AND ns = p_ns;
			IF NOT FOUND THEN
				PERFORM shardjob_rc_fail('nonode', idx - 1);
			END IF;
			IF p_vers[idx] <> -1 AND v <> p_vers[idx] THEN
				PERFORM shardjob_rc_fail('badversion', idx - 1);
			END IF;
		END IF;
		o_paths := o_paths || p;
	END LOOP;
	IF array_length(lpaths, 1) > 0 THEN
		INSERT INTO shardjob_rc_log (ns, rev, i, path, kind)
		SELECT p_ns, r, o.i, o.p, o.k FROM unnest(lpaths, lkinds) WITH ORDINALITY AS o(p, k, i);
		PERFORM pg_notify('` + notifyChannel + `', p_ns);
	END IF;
	o_found := false;
	IF n > 0 THEN
		SELECT true, version, cversion, owner, czxid, mzxid, ctime, mtime, numchildren, length(data)
		INTO o_found, o_version, o_cversion, o_owner, o_czxid, o_mzxid, o_ctime, o_mtime, o_numchildren, o_datalen
		FROM shardjob_rc_nodes WHERE path = p AND ns = p_ns;
		o_found := coalesce(o_found, false);
	END IF;
END
$$;
`,
}

// errSchemaNewer is wrapped when the database's schema is newer than the
// code's.
var errSchemaNewer = errors.New("the database's registry schema is newer than this program's")

// migrate creates or migrates the schema under the advisory lock, in one
// transaction: two processes opening at once do it once.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", schemaLock); err != nil {
			return err
		}
		var have int
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass('shardjob_rc_meta') IS NOT NULL`).Scan(&exists); err != nil {
			return err
		}
		if exists {
			if err := tx.QueryRow(ctx, `SELECT version FROM shardjob_rc_meta WHERE id = 1`).Scan(&have); err != nil {
				return err
			}
		}
		if have > SchemaVersion {
			return fmt.Errorf("%w: version %d, this program knows up to %d; upgrade the program", errSchemaNewer, have, SchemaVersion)
		}
		for v := have; v < SchemaVersion; v++ {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migrating the registry schema from version %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, "UPDATE shardjob_rc_meta SET version = $1 WHERE id = 1", v+1); err != nil {
				return err
			}
		}
		return nil
	})
}
