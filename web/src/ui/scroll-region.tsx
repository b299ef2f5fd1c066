/**
 * The wrapper of a wide table (`.table-wrap`, which scrolls sideways by itself on a narrow screen). While its
 * content is wider than it, or always when `always` is set, it is a named region that takes the keyboard
 * focus, so it can be scrolled with the arrow keys and a screen reader says what scrolls; a table that fits
 * adds no stop to the tab order.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

export interface ScrollRegionProps {
  /** The region's name (`aria-label`); or name it after an element with `labelledBy`. */
  name?: string | undefined;
  labelledBy?: string | undefined;
  /** A region even while the content fits. */
  always?: boolean;
  children: ComponentChildren;
}

export function ScrollRegion({ name, labelledBy, always = false, children }: ScrollRegionProps) {
  const box = useRef<HTMLDivElement>(null);
  const [scrolls, setScrolls] = useState(false);
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const check = () => setScrolls(element.scrollWidth > element.clientWidth + 1);
    check();
    const observer = new ResizeObserver(check);
    observer.observe(element);
    for (const child of Array.from(element.children)) observer.observe(child);
    return () => observer.disconnect();
  }, []);
  const named = name !== undefined || labelledBy !== undefined;
  const region =
    (always || scrolls) && named
      ? {
          tabIndex: 0,
          role: 'region',
          ...(name !== undefined ? { 'aria-label': name } : { 'aria-labelledby': labelledBy }),
        }
      : {};
  return (
    <div ref={box} class="table-wrap" {...region}>
      {children}
    </div>
  );
}
