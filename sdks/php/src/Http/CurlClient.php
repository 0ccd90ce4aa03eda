<?php

declare(strict_types=1);

namespace Merx\Http;

use Merx\Exception\ConfigurationError;
use Psr\Http\Client\ClientInterface;
use Psr\Http\Message\RequestInterface;
use Psr\Http\Message\ResponseFactoryInterface;
use Psr\Http\Message\ResponseInterface;
use Psr\Http\Message\StreamFactoryInterface;

/**
 * A small PSR-18 client over ext-curl, used when no client is given and none is installed. It
 * builds responses with the PSR-17 factories it is handed, follows no redirects and honours a
 * timeout per request.
 */
final class CurlClient implements TimeoutAware
{
    public function __construct(
        private readonly ResponseFactoryInterface $responseFactory,
        private readonly StreamFactoryInterface $streamFactory,
        private readonly float $timeout = 60.0,
    ) {
        if (!\extension_loaded('curl')) {
            throw new ConfigurationError('Merx\Http\CurlClient needs ext-curl');
        }
    }

    public function withTimeout(float $seconds): ClientInterface
    {
        return new self($this->responseFactory, $this->streamFactory, $seconds);
    }

    public function sendRequest(RequestInterface $request): ResponseInterface
    {
        $headers = [];
        foreach ($request->getHeaders() as $name => $values) {
            foreach ($values as $value) {
                $headers[] = "{$name}: {$value}";
            }
        }
        $headers[] = 'Expect:'; // no 100-continue round trip
        $body = (string) $request->getBody();
        $handle = curl_init();
        $responseHeaders = [];
        $statusLine = '';
        curl_setopt_array($handle, [
            \CURLOPT_URL => (string) $request->getUri(),
            \CURLOPT_CUSTOMREQUEST => $request->getMethod(),
            \CURLOPT_HTTPHEADER => $headers,
            \CURLOPT_RETURNTRANSFER => true,
            \CURLOPT_FOLLOWLOCATION => false,
            \CURLOPT_HTTP_VERSION => $request->getProtocolVersion() === '2' ? \CURL_HTTP_VERSION_2_0 : \CURL_HTTP_VERSION_1_1,
            \CURLOPT_TIMEOUT_MS => (int) ceil($this->timeout * 1000),
            \CURLOPT_NOSIGNAL => true,
            \CURLOPT_HEADERFUNCTION => static function ($handle, string $line) use (&$responseHeaders, &$statusLine): int {
                $trimmed = trim($line);
                if (str_starts_with($trimmed, 'HTTP/')) {
                    $statusLine = $trimmed; // a new response (after 1xx): forget earlier headers
                    $responseHeaders = [];
                } elseif (str_contains($trimmed, ':')) {
                    [$name, $value] = explode(':', $trimmed, 2);
                    $responseHeaders[] = [trim($name), trim($value)];
                }

                return \strlen($line);
            },
        ]);
        if ($body !== '' || !\in_array($request->getMethod(), ['GET', 'HEAD'], true)) {
            curl_setopt($handle, \CURLOPT_POSTFIELDS, $body);
        }
        $content = curl_exec($handle);
        $errno = curl_errno($handle);
        $error = curl_error($handle);
        $status = (int) curl_getinfo($handle, \CURLINFO_RESPONSE_CODE);
        curl_close($handle);
        if ($content === false || $errno !== 0) {
            throw new NetworkException("cURL error {$errno}: {$error}", $request, $errno === \CURLE_OPERATION_TIMEDOUT);
        }
        $parts = explode(' ', $statusLine, 3);
        $response = $this->responseFactory->createResponse($status, $parts[2] ?? '')
            ->withProtocolVersion(substr($parts[0], 5) ?: '1.1')
            ->withBody($this->streamFactory->createStream(\is_string($content) ? $content : ''));
        foreach ($responseHeaders as [$name, $value]) {
            $response = $response->withAddedHeader($name, $value);
        }

        return $response;
    }
}
