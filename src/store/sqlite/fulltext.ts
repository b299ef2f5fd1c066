import { type Kysely, type RawBuilder, type Transaction, sql } from 'kysely';
import type { Database } from '../database.js';
import {
  type Collection,
  type FullTextDialect,
  type MatchQuery,
  type TextCandidate,
  fixedBatches,
} from '../fulltext.js';

type Executor = Kysely<Database> | Transaction<Database>;

/** The contentless FTS5 table of each collection (migration 006). */
const TABLES: Record<Collection, RawBuilder<unknown>> = {
  memory: sql.raw('memory_fts'),
  knowledge: sql.raw('knowledge_fts'),
};

/**
 * SQLite full text (`store.fullText`): one contentless FTS5 table per collection (rowid = chunk
 * id, `contentless_delete=1`) holding each chunk's normalised tokens; ranking
 * is FTS5's bm25 (`rank`). Query terms become quoted FTS5 strings joined with
 * OR: they hold letters and digits only, so no FTS5 syntax can come from a
 * query.
 */
export const sqliteFullText: FullTextDialect = {
  async insertChunks(trx, collection, rows) {
    const table = TABLES[collection];
    for (const batch of fixedBatches(rows)) {
      const values = batch.map(
        (row) => sql`(${collection}, ${row.docId}, ${row.chunk}, ${row.text}, ${row.embedding}, ${row.embeddingModel})`,
      );
      const inserted = await sql<{ id: number; chunk: number }>`insert into search_chunks
        (collection, doc_id, chunk, text, embedding, embedding_model) values ${sql.join(values)}
        returning id, chunk`.execute(trx);
      const ids = new Map(inserted.rows.map((row) => [row.chunk, row.id]));
      const fts = batch.map((row) => sql`(${ids.get(row.chunk)}, ${row.tokens.join(' ')})`);
      await sql`insert into ${table} (rowid, body) values ${sql.join(fts)}`.execute(trx);
    }
  },

  async deleteChunks(trx, collection, docId) {
    await sql`delete from ${TABLES[collection]} where rowid in (
      select id from search_chunks where collection = ${collection} and doc_id = ${docId})`.execute(trx);
    await sql`delete from search_chunks where collection = ${collection} and doc_id = ${docId}`.execute(trx);
  },

  async termCounts(db, collection, terms, cap) {
    const table = TABLES[collection];
    const counts: number[] = [];
    for (const term of terms) {
      const result = await sql<{ n: number }>`
        select count(*) as n from (select rowid from ${table} where ${table} match ${phrase(term)} limit ${cap})`.execute(
        db,
      );
      counts.push(Number(result.rows[0]?.n ?? 0));
    }
    return counts;
  },

  bestMatches: (db, query) => matches(db, query, sql`rank`),

  recentMatches: (db, query) => matches(db, query, sql`rowid desc`),
};

/** A term as an FTS5 string (terms hold letters and digits only: nothing to escape). */
function phrase(term: string): string {
  return `"${term}"`;
}

function matchExpression(terms: MatchQuery['terms']): string {
  return terms.map(phrase).join(' OR ');
}

/**
 * The first `query.limit` chunks matching the terms in `order` (a column of
 * the FTS5 table: `rank` best first, `rowid desc` newest first), within the
 * allowed documents when given (the join then filters before the limit).
 */
function matches(db: Executor, query: MatchQuery, order: RawBuilder<unknown>): Promise<TextCandidate[]> {
  const table = TABLES[query.collection];
  const match = matchExpression(query.terms);
  if (!query.allowed) {
    return candidates(
      db,
      sql<Row>`select c.id as id, c.doc_id as doc_id, c.chunk as chunk, m.rank as rank
        from (select rowid, rank from ${table} where ${table} match ${match} order by ${order} limit ${query.limit}) m
        join search_chunks c on c.id = m.rowid`,
    );
  }
  return candidates(
    db,
    sql<Row>`select c.id as id, c.doc_id as doc_id, c.chunk as chunk, ${table}.rank as rank
      from ${table} join search_chunks c on c.id = ${table}.rowid
      where ${table} match ${match} and c.doc_id in (${query.allowed})
      order by ${table}.${order} limit ${query.limit}`,
  );
}

/** A candidate row as the queries above select it. */
interface Row {
  id: number;
  doc_id: string;
  chunk: number;
  rank: number;
}

async function candidates(db: Executor, query: RawBuilder<Row>): Promise<TextCandidate[]> {
  const result = await query.execute(db);
  // bm25 is negative, lower is better; FTS5 clamps its idf above 0, so a match always scores above 0.
  return result.rows.map((row) => ({ id: row.id, docId: row.doc_id, chunk: row.chunk, score: Math.max(0, -row.rank) }));
}
