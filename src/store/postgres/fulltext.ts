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

/** PostgreSQL's limits on a tsvector: positions up to 16383, at most 256 per lexeme. */
const MAX_POSITION = 16_383;
const MAX_POSITIONS_PER_LEXEME = 256;

/**
 * The collection as a literal, so the planner matches the collection's
 * partial GIN index (`where collection = '…'`) whatever the plan cache does.
 * Safe: a Collection is one of two fixed words.
 */
function collectionLiteral(collection: Collection): RawBuilder<unknown> {
  return sql.lit(collection);
}

/**
 * PostgreSQL full text (`store.fullText`): a `tsvector` column under one partial GIN index per
 * collection, ranked with `ts_rank_cd` (normalisation 1: divided by 1 + log
 * of the chunk length). The tsvector and the tsquery are written as literals
 * from the engine's own tokens (letters and digits only, so quoting is
 * trivial), not by `to_tsvector`, so PostgreSQL's parser and locale never
 * change what matches and both databases index the same terms.
 */
export const postgresFullText: FullTextDialect = {
  async insertChunks(trx, collection, rows) {
    for (const batch of fixedBatches(rows)) {
      const values = batch.map(
        (row) =>
          sql`(${collection}, ${row.docId}, ${row.chunk}, ${row.text}, cast(${tsvectorLiteral(row.tokens)} as tsvector), ${row.embedding}, ${row.embeddingModel})`,
      );
      await sql`insert into search_chunks (collection, doc_id, chunk, text, tsv, embedding, embedding_model)
        values ${sql.join(values)}`.execute(trx);
    }
  },

  async deleteChunks(trx, collection, docId) {
    await sql`delete from search_chunks where collection = ${collection} and doc_id = ${docId}`.execute(trx);
  },

  async termCounts(db, collection, terms, cap) {
    if (terms.length === 0) return [];
    const parts = terms.map(
      (term, i) => sql`select ${sql.lit(i)} as i, count(*) as n from (
        select 1 from search_chunks
        where collection = ${collectionLiteral(collection)} and tsv @@ cast(${tsquery([term])} as tsquery)
        limit ${cap}) s${sql.raw(String(i))}`,
    );
    const result = await sql<{ i: number; n: number }>`${sql.join(parts, sql` union all `)}`.execute(db);
    const counts = terms.map(() => 0);
    for (const row of result.rows) counts[Number(row.i)] = Number(row.n);
    return counts;
  },

  async bestMatches(db, query) {
    const q = tsquery(query.terms);
    const allowed = query.allowed ? sql`and c.doc_id in (${query.allowed})` : sql``;
    return candidates(
      db,
      sql<Row>`select c.id as id, c.doc_id as doc_id, c.chunk as chunk, ts_rank_cd(c.tsv, cast(${q} as tsquery), 1) as score
        from search_chunks c
        where c.collection = ${collectionLiteral(query.collection)} and c.tsv @@ cast(${q} as tsquery) ${allowed}
        order by score desc, c.id desc
        limit ${query.limit}`,
    );
  },

  async recentMatches(db, query) {
    const q = tsquery(query.terms);
    const allowed = query.allowed ? sql`and c.doc_id in (${query.allowed})` : sql``;
    return candidates(
      db,
      sql<Row>`select m.id as id, m.doc_id as doc_id, m.chunk as chunk, ts_rank_cd(m.tsv, cast(${q} as tsquery), 1) as score
        from (
          select c.id, c.doc_id, c.chunk, c.tsv from search_chunks c
          where c.collection = ${collectionLiteral(query.collection)} and c.tsv @@ cast(${q} as tsquery) ${allowed}
          order by c.id desc
          limit ${query.limit}
        ) m`,
    );
  },
};

/** `'a' | 'b'`: a tsquery literal of terms (letters and digits only: nothing to escape). */
function tsquery(terms: MatchQuery['terms']): string {
  return terms.map((term) => `'${term}'`).join(' | ');
}

/** A candidate row as the queries above select it (ids are bigint, parsed to numbers). */
interface Row {
  id: number;
  doc_id: string;
  chunk: number;
  score: number;
}

async function candidates(db: Executor, query: RawBuilder<Row>): Promise<TextCandidate[]> {
  const result = await query.execute(db);
  return result.rows.map((row) => ({
    id: Number(row.id),
    docId: row.doc_id,
    chunk: row.chunk,
    score: Math.max(0, row.score),
  }));
}

/** `'lexeme':1,4 'other':2` with 1-based positions, within PostgreSQL's limits. */
export function tsvectorLiteral(tokens: readonly string[]): string {
  const positions = new Map<string, number[]>();
  tokens.forEach((token, i) => {
    const list = positions.get(token);
    const position = Math.min(i + 1, MAX_POSITION);
    if (!list) positions.set(token, [position]);
    else if (list.length < MAX_POSITIONS_PER_LEXEME && list[list.length - 1] !== position) list.push(position);
  });
  const parts: string[] = [];
  for (const [token, list] of positions) parts.push(`'${token}':${list.join(',')}`);
  return parts.join(' ');
}
