<?php

declare(strict_types=1);

namespace Merx\Core;

use Merx\Exception\ConnectionError;
use Merx\Exception\MerxError;
use Merx\Exception\TimeoutError;
use Merx\Http\NetworkException;
use Merx\Http\TimeoutAware;
use Psr\Http\Client\ClientExceptionInterface;
use Psr\Http\Client\ClientInterface;
use Psr\Http\Message\RequestFactoryInterface;
use Psr\Http\Message\RequestInterface;
use Psr\Http\Message\ResponseInterface;
use Psr\Http\Message\StreamFactoryInterface;

/**
 * @internal Sends one API call: builds the PSR-7 request (auth, User-Agent, Idempotency-Key,
 * If-Match), sends it through the PSR-18 client, retries what is safe to retry with exponential
 * backoff and jitter (honouring Retry-After), refreshes the token once on a 401 and turns error
 * answers into the MerxError of their status.
 */
final class Requestor
{
    private const MAX_BACKOFF_SECONDS = 8.0;

    private const MAX_RETRY_AFTER_SECONDS = 60.0;

    /** @param array<string, string> $defaultHeaders */
    public function __construct(
        private readonly string $baseUrl,
        private readonly Credentials $credentials,
        private readonly ClientInterface $httpClient,
        private readonly RequestFactoryInterface $requestFactory,
        private readonly StreamFactoryInterface $streamFactory,
        private readonly float $timeout,
        private readonly int $maxRetries,
        private readonly array $defaultHeaders,
        private readonly string $userAgent,
        private readonly bool $debug,
    ) {
    }

    /**
     * @param array<string, mixed> $query
     * @param array<string, mixed>|null $body
     * @param 'json'|'form' $encoding
     */
    public function request(
        string $method,
        string $path,
        array $query = [],
        ?array $body = null,
        bool $authenticated = true,
        RequestOptions|array|null $options = null,
        string $encoding = 'json',
    ): ApiResponse {
        $options = RequestOptions::from($options);
        $maxRetries = $options->maxRetries ?? $this->maxRetries;
        $client = $this->clientFor($options->timeout ?? $this->timeout);
        // One key for every attempt: a create retried after a lost answer is replayed, not repeated.
        $idempotencyKey = $options->idempotencyKey ?? ($method === 'POST' ? Uuid::v4() : null);
        $url = $this->baseUrl . $path . Query::encode($query);
        $refreshedToken = false;
        for ($attempt = 0; ; ++$attempt) {
            $request = $this->buildRequest($method, $url, $body, $encoding, $options, $idempotencyKey, $authenticated);
            $started = microtime(true);
            try {
                $response = $client->sendRequest($request);
            } catch (ClientExceptionInterface $e) {
                $error = self::noAnswer($e, $method, $path);
                $this->log($method, $path, null, $started, null, $attempt, $e->getMessage());
                if ($attempt < $maxRetries) {
                    $this->pause($attempt, null);
                    continue;
                }
                throw $error;
            }
            $status = $response->getStatusCode();
            $meta = new ResponseMeta($status, self::headersOf($response));
            $this->log($method, $path, $status, $started, $meta->requestId(), $attempt, null);
            $responseBody = (string) $response->getBody();
            if ($status < 400) {
                return new ApiResponse($responseBody, $meta);
            }
            if ($status === 401 && $authenticated && !$refreshedToken && $this->credentials->canRefresh()) {
                // The token expired early or was revoked server side: one fresh token, one more try.
                $refreshedToken = true;
                $this->credentials->invalidate();
                --$attempt;
                continue;
            }
            $problem = self::problemOf($responseBody);
            if ($attempt < $maxRetries && self::retryable($status, $problem)) {
                $this->pause($attempt, self::retryAfterSeconds($meta));
                continue;
            }
            throw MerxError::fromProblem($status, $problem, $meta->headers, $meta->requestId());
        }
    }

    /**
     * @template T of Model
     *
     * @param array<string, mixed> $query
     * @param class-string<T> $itemClass
     *
     * @return Page<T>
     */
    public function page(string $path, array $query, string $itemClass, RequestOptions|array|null $options): Page
    {
        $response = $this->request('GET', $path, $query, options: $options);
        $data = Hydrate::object($response->json(), '$');
        $items = Hydrate::list(Hydrate::field($data, 'data', '$', true), '$.data', static fn (mixed $item, string $at): Model => Hydrate::model($item, $at, $itemClass));
        $nextCursor = Hydrate::field($data, 'next_cursor', '$', false);

        return new Page(
            $items,
            Hydrate::bool(Hydrate::field($data, 'has_more', '$', true), '$.has_more'),
            \is_string($nextCursor) ? $nextCursor : null,
            $response->meta,
            fn (string $cursor): Page => $this->page($path, ['cursor' => $cursor] + $query, $itemClass, $options),
        );
    }

    private function clientFor(float $timeout): ClientInterface
    {
        return $this->httpClient instanceof TimeoutAware ? $this->httpClient->withTimeout($timeout) : $this->httpClient;
    }

    /** @param array<string, mixed>|null $body */
    private function buildRequest(string $method, string $url, ?array $body, string $encoding, RequestOptions $options, ?string $idempotencyKey, bool $authenticated): RequestInterface
    {
        $request = $this->requestFactory->createRequest($method, $url)
            ->withHeader('Accept', 'application/json')
            ->withHeader('User-Agent', $this->userAgent);
        foreach ($this->defaultHeaders + $options->headers as $name => $value) {
            $request = $request->withHeader($name, $value);
        }
        if ($authenticated) {
            $request = $request->withHeader('Authorization', 'Bearer ' . $this->credentials->bearerToken());
        }
        if ($idempotencyKey !== null) {
            $request = $request->withHeader('Idempotency-Key', $idempotencyKey);
        }
        if ($options->ifMatch !== null) {
            $request = $request->withHeader('If-Match', $options->ifMatch);
        }
        if ($body !== null) {
            [$contentType, $content] = $encoding === 'form'
                ? ['application/x-www-form-urlencoded', http_build_query($body, '', '&', \PHP_QUERY_RFC1738)]
                : ['application/json', Json::encode($body === [] ? new \stdClass() : $body)];
            $request = $request->withHeader('Content-Type', $contentType)->withBody($this->streamFactory->createStream($content));
        }

        return $request;
    }

    /** A request that got no answer: a TimeoutError when the timeout cut it, else a ConnectionError. */
    private static function noAnswer(ClientExceptionInterface $e, string $method, string $path): ConnectionError
    {
        $timedOut = false;
        for ($cause = $e; $cause !== null; $cause = $cause->getPrevious()) {
            $timedOut = $timedOut
                || ($cause instanceof NetworkException && $cause->timedOut)
                || is_a($cause, 'Symfony\Contracts\HttpClient\Exception\TimeoutExceptionInterface')
                || preg_match('/timed? ?out|timeout/i', $cause->getMessage()) === 1;
        }
        $message = ($timedOut ? "{$method} {$path} timed out" : "{$method} {$path} got no answer") . ": {$e->getMessage()}";

        return $timedOut ? new TimeoutError($message, previous: $e) : new ConnectionError($message, previous: $e);
    }

    /** @param array<string, mixed> $problem */
    private static function retryable(int $status, array $problem): bool
    {
        return $status === 408
            || $status === 429
            || $status >= 500
            || ($status === 409 && ($problem['code'] ?? null) === 'idempotency_key_in_use');
    }

    /** Retry-After (seconds or an HTTP date) or retry-after-ms, when it asks for a sane wait. */
    private static function retryAfterSeconds(ResponseMeta $meta): ?float
    {
        $seconds = null;
        $milliseconds = $meta->header('retry-after-ms');
        $header = $meta->header('retry-after');
        if ($milliseconds !== null && is_numeric($milliseconds)) {
            $seconds = (float) $milliseconds / 1000;
        } elseif ($header !== null && is_numeric($header)) {
            $seconds = (float) $header;
        } elseif ($header !== null && ($date = strtotime($header)) !== false) {
            $seconds = $date - microtime(true);
        }

        return $seconds !== null && $seconds >= 0 && $seconds <= self::MAX_RETRY_AFTER_SECONDS ? $seconds : null;
    }

    /** Exponential backoff from half a second, capped at 8 s, less up to a quarter of jitter. */
    private function pause(int $attempt, ?float $retryAfter): void
    {
        $seconds = $retryAfter ?? min(0.5 * 2 ** $attempt, self::MAX_BACKOFF_SECONDS) * (1 - 0.25 * (mt_rand() / mt_getrandmax()));
        usleep((int) round($seconds * 1_000_000));
    }

    /** @return array<string, mixed> */
    private static function problemOf(string $body): array
    {
        $decoded = json_decode($body, true);

        return \is_array($decoded) && !array_is_list($decoded) ? $decoded : [];
    }

    /** @return array<string, list<string>> */
    private static function headersOf(ResponseInterface $response): array
    {
        $headers = [];
        foreach ($response->getHeaders() as $name => $values) {
            $headers[strtolower((string) $name)] = array_values($values);
        }

        return $headers;
    }

    /** MERX_LOG=debug: one line per attempt, never a header or a body (they hold secrets). */
    private function log(string $method, string $path, ?int $status, float $started, ?string $requestId, int $attempt, ?string $error): void
    {
        if (!$this->debug) {
            return;
        }
        error_log(\sprintf(
            '[merx] %s %s %s %dms%s%s',
            $method,
            $path,
            $status ?? 'no answer',
            (int) round((microtime(true) - $started) * 1000),
            $requestId !== null ? " request_id={$requestId}" : '',
            ($attempt > 0 ? " retry={$attempt}" : '') . ($error !== null ? " error=\"{$error}\"" : ''),
        ));
    }
}
