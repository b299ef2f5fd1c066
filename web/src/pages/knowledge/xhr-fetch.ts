/**
 * A `fetch` for the typed client that sends through `XMLHttpRequest`, whose `upload.onprogress` reports the
 * bytes sent (a streamed `fetch` body would need HTTP/2 in Chromium; the gateway speaks HTTP/1.1). The typed
 * client builds the request (path, headers, JSON body) and reads the answer as usual: this only carries it.
 */

/** Bytes of the request body sent so far, out of the total. */
export interface UploadProgress {
  loaded: number;
  total: number;
}

/** A `fetch(request)` that reports upload progress to `onProgress`; aborts with `signal`. */
export function xhrFetch(
  onProgress: (progress: UploadProgress) => void,
  signal?: AbortSignal,
): (request: Request) => Promise<Response> {
  return async (request) => {
    const body = request.method === 'GET' || request.method === 'HEAD' ? null : await request.blob();
    return new Promise<Response>((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open(request.method, request.url);
      request.headers.forEach((value, name) => xhr.setRequestHeader(name, value));
      xhr.responseType = 'blob';
      xhr.upload.onprogress = (event) => {
        onProgress({ loaded: event.loaded, total: event.lengthComputable ? event.total : (body?.size ?? 0) });
      };
      xhr.onload = () => {
        const headers = new Headers();
        for (const line of xhr.getAllResponseHeaders().trim().split(/\r?\n/)) {
          const colon = line.indexOf(':');
          if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
        }
        const empty = xhr.status === 204 || xhr.status === 205 || xhr.status === 304;
        resolve(new Response(empty ? null : (xhr.response as Blob), { status: xhr.status, headers }));
      };
      xhr.onerror = () => reject(new TypeError('The upload failed: the connection was lost.'));
      xhr.onabort = () => reject(new DOMException('The upload was cancelled.', 'AbortError'));
      signal?.addEventListener('abort', () => xhr.abort(), { once: true });
      xhr.send(body);
    });
  };
}
