/**
 * The table of a list: named for screen readers (a visually hidden caption, a label or a heading), column
 * headings, and a wrapper that scrolls sideways on a narrow screen; an empty list shows its empty state
 * instead, and a list still loading shows nothing.
 */
import type { ComponentChildren, VNode } from 'preact';
import { Empty } from '../ui';
import { ScrollRegion } from './scroll-region';

/** A column heading, or `{ label, hidden: true }` for one only screen readers read (an actions column). */
export type Column = string | { label: string; hidden: true };

export interface TableProps<T> {
  /** The rows; `undefined` while they load. */
  rows: readonly T[] | undefined;
  /** The `<tr>` of one row, with its `key`. */
  row: (item: T) => VNode;
  columns: readonly Column[];
  /** What an empty list says. */
  empty: ComponentChildren;
  /** The table's name as a visually hidden caption; or name it with `label` or `labelledBy`. */
  caption?: string;
  label?: string;
  labelledBy?: string;
  /**
   * Names the scrolling wrapper as a region and makes it focusable, so a keyboard can scroll it sideways
   * (for tables wide enough to scroll on a phone). Without it, the wrapper is such a region only while the
   * table is wider than it, named like the table.
   */
  region?: string;
  /** The width below which the wrapper scrolls rather than squeezing the columns. */
  minWidth?: string;
  testId?: string;
}

export function Table<T>({
  rows,
  row,
  columns,
  empty,
  caption,
  label,
  labelledBy,
  region,
  minWidth,
  testId,
}: TableProps<T>) {
  if (rows === undefined) return null;
  if (rows.length === 0) return <Empty>{empty}</Empty>;
  return (
    <ScrollRegion name={region ?? label ?? caption} labelledBy={labelledBy} always={region !== undefined}>
      <table
        aria-label={label}
        aria-labelledby={labelledBy}
        data-testid={testId}
        style={minWidth ? { minWidth } : undefined}
      >
        {caption && <caption class="visually-hidden">{caption}</caption>}
        <thead>
          <tr>
            {columns.map((column) =>
              typeof column === 'string' ? (
                <th key={column} scope="col">
                  {column}
                </th>
              ) : (
                <th key={column.label} scope="col">
                  <span class="visually-hidden">{column.label}</span>
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{rows.map((item) => row(item))}</tbody>
      </table>
    </ScrollRegion>
  );
}
